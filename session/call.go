package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/audiolimit"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/session/internal/answer"
	"github.com/frontdoorhq/frontdoor/session/internal/listen"
	"github.com/frontdoorhq/frontdoor/session/internal/observe"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"golang.org/x/time/rate"
)

// Why a call ended.
var (
	errHangup    = errors.New("session: caller hung up")
	errGone      = errors.New("session: caller disconnected")
	errGoingAway = errors.New("session: server shutting down")
	errRefused   = errors.New("session: refused by the session stage")
	// ErrTransferred: the transport ended the call because a person took
	// it (a Twilio stream closed so that the TwiML transfers the call).
	ErrTransferred = errors.New("session: call transferred to a person")
)

// Call is one caller's conversation: its session lease, its generation, its
// turns and its single writer.
type Call struct {
	s    *Engine
	id   string
	t    Transport
	caps Capabilities // what t declared it can do beyond Transport
	log  *slog.Logger
	out  *outbound.Queue // its queue and single writer (package internal/outbound)

	gen     atomic.Uint64 // current generation; the writer reads it before every write
	premise atomic.Uint64 // current premise of prompts (premise.go); the writer reads it too
	spoken  atomic.Uint64 // the premise of the last prompt sent: its audio's
	ctx     context.Context
	stopper context.CancelCauseFunc
	history *backend.History
	obs     observe.Call // its log line and trace (package internal/observe)

	// The conversation's state, which only the call's owner touches
	// (owner.go), and the owner's mailbox.
	o   own
	box mailbox

	greeted  bool                        // some message was received (hello must be first); the reader's own
	format   atomic.Pointer[replyFormat] // set by the reader at hello (reader.go)
	admitted atomic.Bool                 // the session admitted the call: the reader's view (hear)

	// rotated is the generation each stage has confirmed for this call
	// (by stage slot: the session's, then the turn pipeline's): work of
	// generation g is submitted only once its stage is at g (Call.rotate).
	rotated []admission.Rotation

	jobs sync.WaitGroup   // turn goroutines, until their backends returned
	ans  *answer.Listener // spoken answers to an offer (answer.go); nil without a recognizer
	hold answer.Hold      // a refused call held open for its offer (answer.go)
	// leaveTenant gives the call's tenant slot back (once); nil until
	// the call entered its tenant (tenant.go).
	leaveTenant func()
	ears        *listen.Listener // caller audio; the reader's own
	audio       *rate.Limiter    // caller audio allowance (audiolimit.go); the reader's own
}

// phase is where a call is in its life. It only moves forward (advance),
// on the call's owner.
type phase uint8

const (
	phaseWaiting  phase = iota // connected; the session stage has not admitted it
	phaseAdmitted              // admitted: turns are accepted and wait for talking
	phaseTalking               // its turns run
	phaseEnded                 // stopped: no turn and no barge-in is taken
)

// advance moves the call to p unless it is there or past it already (on
// the owner).
func (c *Call) advance(p phase) {
	if c.o.phase < p {
		c.o.phase = p
	}
}

func newCall(s *Engine, id string, t Transport, caps Capabilities) *Call {
	c := &Call{s: s, id: id, t: t, caps: caps, log: s.log.With("call", id),
		history: backend.NewHistory(0, 0), rotated: make([]admission.Rotation, 1+len(s.steps)),
		o: own{inflight: map[string]bool{}}}
	c.format.Store(&replyFormat{Format: media.Format{Encoding: media.PCM16, Channels: 1}, span: 1})
	c.ans = s.ans.Listen(answerer{c}, c.log)
	c.premise.Store(1)
	c.spoken.Store(1)
	c.out = c.newOutbound()
	if caps.Voice != nil {
		caps.Voice(c)
	}
	return c
}

// ID returns the call's identity (the owner in every stage).
func (c *Call) ID() string { return c.id }

// Keypad returns the keypad the call's transport declared
// (Capabilities.Keypad), or nil (Sender).
func (c *Call) Keypad() func(offered []string) []string { return c.caps.Keypad }

// Send queues msg for the caller, in order with every other message of
// the call and ahead of audio still queued (Sender). A message that says
// the call's state changed cuts the prompt audio spoken for the old state.
func (c *Call) Send(ctx context.Context, msg wire.Message) error {
	return c.push(ctx, frame{msg: msg, bump: changesPremise(msg)})
}

func (c *Call) stop(cause error) {
	if c.stopper != nil {
		c.stopper(cause)
	}
}

// run serves the call until it has ended (Engine.Run).
func (c *Call) run(parent context.Context) {
	ended := make(chan struct{})
	c.start(parent, func() { close(ended) })
	<-ended
}

// start sets the call going and returns. The call holds a goroutine only
// while it has something to do: its reader always, its session admission
// while that waits, its owner while events are queued (owner.go), a turn's
// while it runs, its writer while frames are queued. An idle call costs
// its reader alone; another goroutine takes the call down once it is
// stopped (end). ended is called when the call has ended and every piece of its
// backend work has stopped.
func (c *Call) start(parent context.Context, ended func()) {
	ctx, stop := context.WithCancelCause(parent)
	c.ctx, c.stopper = ctx, stop
	c.o.genCtx, c.o.genCancel = context.WithCancel(ctx) // before any event
	c.gen.Store(1)
	c.obs.Start(c.s.obs, c.id, tenant.CallerFrom(parent).Tenant, c.log)

	// The reader and writer use contexts of their own: a coder/websocket
	// Read or Write whose context ends drops the connection, and the call
	// must first close it with the right status.
	ioCtx, ioCancel := context.WithCancel(parent)
	var io sync.WaitGroup
	// The writer runs while there is something to write; a write
	// stalled for twice its timeout ends with the connection.
	c.out.Serve(ioCtx, (*callLine)(c), c.stop, func() { c.abort(ioCancel) })
	io.Go(func() { c.readLoop(ioCtx, &io) })

	var lead sync.WaitGroup
	var admitted bool
	lead.Go(func() {
		var lost <-chan struct{}
		admitted, lost = c.admitSession(ctx)
		c.obs.Session(admitted)
		if !admitted {
			if !c.hold.Held() { // a held call stops when its hold ends (answer.go)
				c.stop(errRefused)
			}
			return
		}
		c.log.Info("call admitted")
		// The call becomes an owner at generation 1 of each turn stage
		// now, so that its first turn finds it there; a stage that fails
		// is tried again before the turn's work is submitted to it.
		for _, st := range c.s.turnStages() {
			if err := c.rotate(ctx, st, 1); err != nil {
				c.log.Warn("rotate", "stage", st.Name(), "generation", 1, "err", err)
			}
		}
		c.post(event{kind: evTalking}) // and the turns sent before this point run
		if lost != nil {
			lead.Go(func() { c.watchSessionLease(ctx, lost) })
		}
	})
	// Once the call is stopped: its admission returns (it watches ctx) and
	// its owner stops taking turns, then the call is taken down.
	context.AfterFunc(ctx, func() {
		lead.Wait()
		gone := make(chan struct{})
		c.post(event{kind: evEnd, gone: gone}) // (stopOwner)
		<-gone
		c.end(context.Cause(ctx), admitted, &io, ioCancel)
		ioCancel()
		ended()
	})
}

// end takes the call down in order: its turn stages forget it, the writer
// stops (after the refusal's prompt, if any), the connection closes, the
// call's backends return and release their leases, and only then is the
// session lease released.
func (c *Call) end(cause error, admitted bool, io *sync.WaitGroup, ioCancel context.CancelFunc) {
	if errors.Is(cause, ErrSlowReader) {
		c.s.m.SlowReaders.Inc()
		c.log.Warn("caller not reading: closing (1008)", "queued_bytes_max", c.out.MaxBytes())
	}

	// Forget the call in every turn stage: queued work is cancelled, active
	// work loses its right to speak (the owner cancelled its generation)
	// and keeps its lease until its backend returns.
	for _, st := range c.s.turnStages() {
		if err := st.Forget(c.ctx, c.id); err != nil {
			c.log.Warn("forget", "stage", st.Name(), "err", err)
		}
	}

	ek := endOf(cause)
	if ek.tell {
		if c.caps.Closing != nil {
			c.caps.Closing(ek.status) // its last line, if any, is kept before the close
		}
		c.out.Close() // let the prompt (or the error) out first
	} else {
		c.out.Discard()
	}
	if errors.Is(cause, ErrSlowReader) {
		c.abort(ioCancel) // it reads nothing: no close handshake to wait for
	}
	c.out.Wait() // the writer, if one runs; none starts after close
	// The close handshake may wait for a caller who does not answer; the
	// session lease waits only for the call's backend work.
	closed := make(chan struct{})
	io.Go(func() { c.t.Close(ek.status, ek.reason); close(closed) })

	c.jobs.Wait()
	c.ans.Wait() // (its recognizer ends with c.ctx)
	if admitted {
		if _, err := c.s.session.Release(c.ctx, c.id); err != nil {
			c.log.Error("release session", "err", err)
		}
	}
	if err := c.s.session.Forget(c.ctx, c.id); err != nil {
		c.log.Warn("forget", "stage", StageSession, "err", err)
	}
	c.obs.Released()
	if ek.status == wire.ClosePolicy { // the caller broke a rule: its handshake gets closeGrace
		grace := clock.NewTimer(c.s.cfg.Clock, closeGrace)
		defer grace.Stop()
		select {
		case <-closed:
		case <-grace.C:
			ioCancel() // ends the reader, which drops the connection
		}
	}
	<-closed
	ioCancel() // in case the transport's Close did not end its Recv
	io.Wait()
	c.s.cfg.Fallback.CallEnded(c.id)
	c.s.m.Calls.WithLabelValues(ek.name).Inc()
	c.s.m.NoteOutbound(c.out.MaxBytes())
	c.log.Info("call ended", "end", ek.name, "stale_suppressed", c.out.Stale())
	c.observeEnd(ek.name)
}

// endOf is how a call that ended for cause closes and is counted, and
// whether what it queued last (its refusal's prompt, the error that ended
// it) goes out before the close.
func endOf(cause error) endKind {
	for _, k := range endKinds {
		if errors.Is(cause, k.err) {
			return k
		}
	}
	return endKind{status: wire.CloseNormal, name: "disconnected"}
}

type endKind struct {
	err    error
	status wire.CloseStatus
	reason string
	name   string // frontdoor_calls_total's end
	tell   bool   // its last messages are written before the close
}

var endKinds = []endKind{
	{errRefused, wire.CloseTryLater, "try again later", "refused", true},
	{errSessionLost, wire.CloseTryLater, "session lease lost", "lease_lost", true},
	{ErrSlowReader, wire.ClosePolicy, "slow reader", "slow_reader", false},
	{errGoingAway, wire.CloseGoingAway, "server shutting down", "going_away", false},
	{errHangup, wire.CloseNormal, "", "hangup", false},
	{tenant.ErrRateLimited, wire.ClosePolicy, "rate limited", "rate_limited", true},
	{audiolimit.ErrRate, wire.ClosePolicy, "audio rate", "audio_rate", true},
	{ErrTransferred, wire.CloseTryLater, "transferred to a person", "transferred", false},
}

// admitSession offers the call to the session stage and waits while it is
// queued. It reports whether the call was admitted, and the channel
// closed if its session lease is lost. A store that cannot
// take the call refuses it closed: the caller hears that the service is
// unavailable, never that it is busy.
func (c *Call) admitSession(ctx context.Context) (bool, <-chan struct{}) {
	if !c.enterTenant(ctx) {
		return false, nil
	}
	st := c.s.session
	if err := c.rotate(ctx, st, 1); err != nil {
		c.log.Error("session rotate", "err", err)
		c.refuseSession(ctx, stages.Closed)
		return false, nil
	}
	job := stages.Job{ID: c.id, Owner: c.id, Generation: 1, Born: c.s.cfg.Clock.Now(), Tenant: tenant.CallerFrom(ctx).Tenant}
	tk, d, err := st.Submit(ctx, job)
	if err != nil {
		c.log.Error("session submit", "err", err)
		d = stages.Closed
	}
	var left bool
	if d != stages.Queued {
		c.refuseSession(ctx, d)
		return false, nil
	}
	pos, _, _ := tk.Position(ctx)
	queued := func(pos int) {
		_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: stages.Queued, Session: c.id, Position: pos})
	}
	if pos > 0 {
		queued(pos)
		c.s.refuse(ctx, Refusal{Call: c.id, Stage: StageSession, Disposition: stages.Queued, Position: pos}, c)
	}
	d, left = st.Await(ctx, tk, c.id, pos, c.s.cfg.QueueUpdate, queued)
	switch {
	case left:
		return d == stages.Admitted, nil // admitted as the caller left: end releases it
	case d == stages.Admitted:
		// Posted before the caller is told, so that the turns it sends
		// once told find the call admitted.
		c.admitted.Store(true)
		c.post(event{kind: evAdmitted})
		_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: stages.Admitted, Session: c.id})
		return true, tk.Lost()
	default:
		c.refuseSession(ctx, d)
		return false, nil
	}
}

// rotate brings st to generation gen for this call, unless it is there
// already. A store that answers that the call is already at or past gen
// (stages.ErrGeneration: another rotation got there first) has done what
// was asked. Any other error leaves the stage behind; the next work for
// this stage tries again first. In fleet mode it is a round trip to the
// store.
func (c *Call) rotate(ctx context.Context, st *stage, gen uint64) error {
	return st.Rotate(ctx, &c.rotated[st.Slot()], c.id, gen)
}

func (c *Call) refuseSession(ctx context.Context, d stages.Disposition) {
	c.log.Info("session refused", "disposition", d)
	c.obs.Refusal(d)
	_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: d, Session: c.id})
	if c.leaveTenant != nil {
		c.leaveTenant() // a refused caller holds no slot of its tenant while it hears why
	}
	c.hold.Refusing(true)
	c.s.refuse(ctx, Refusal{Call: c.id, Stage: StageSession, Disposition: d}, c)
	c.hold.Refusing(false)
}
