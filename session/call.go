package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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

	mu        sync.Mutex
	genCtx    context.Context // cancelled when the generation rotates
	genCancel context.CancelFunc
	phase     phase           // where the call is in its life; only moves forward
	sessLost  <-chan struct{} // the session lease may be lost (fleet mode): the call then ends
	greeted   bool            // some message was received (hello must be first)
	format    media.Format    // reply audio; SampleRate 0: the synthesizer's
	span      int             // 20 ms frames in one binary frame of reply audio (hello.audio.frame_ms / 20)
	pending   []*turn
	speaking  *turn
	inflight  map[string]bool
	seq       uint64
	// The conversation runs in a goroutine only while turns are pending
	// or running (converse), and only in phaseTalking: conversing while
	// that goroutine runs.
	conversing bool
	talk       sync.WaitGroup // the conversation's goroutine

	// rotated is the generation each stage has confirmed for this call
	// (by stage index): work of generation g is submitted only once its
	// stage is at g (Call.rotate), never under c.mu.
	rotated [4]admission.Rotation

	jobs sync.WaitGroup   // turn goroutines, until their backends returned
	ans  *answer.Listener // spoken answers to an offer (answer.go); nil without a recognizer
	hold holdState        // a refused call held open for its offer (hold.go)
	// leaveTenant gives the call's tenant slot back (once); nil until
	// the call entered its tenant (tenant.go).
	leaveTenant func()
	ears        *listen.Listener // caller audio; the reader's own
	audio       *rate.Limiter    // caller audio allowance (audiolimit.go); the reader's own
}

// phase is where a call is in its life. It only moves forward (advance),
// under Call.mu.
type phase uint8

const (
	phaseWaiting  phase = iota // connected; the session stage has not admitted it
	phaseAdmitted              // admitted: turns are accepted and wait for talking
	phaseTalking               // its turns run (the conversation may start)
	phaseClosing               // stopped: its end waits for the conversation; none starts again
	phaseEnded                 // taken down: no turn and no barge-in is taken
)

// advance moves the call to p unless it is there or past it already.
// Called with c.mu held.
func (c *Call) advance(p phase) {
	if c.phase < p {
		c.phase = p
	}
}

func newCall(s *Engine, id string, t Transport, caps Capabilities) *Call {
	c := &Call{s: s, id: id, t: t, caps: caps, log: s.log.With("call", id),
		history:  backend.NewHistory(0, 0),
		format:   media.Format{Encoding: media.PCM16, Channels: 1},
		span:     1,
		inflight: map[string]bool{}}
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
// while that waits, its conversation while turns are pending or running
// (converse), its writer while frames are queued. An idle call costs its
// reader alone; another goroutine takes the call down once it is stopped
// (end). ended is called when the call has ended and every piece of its
// backend work has stopped.
func (c *Call) start(parent context.Context, ended func()) {
	ctx, stop := context.WithCancelCause(parent)
	c.mu.Lock()
	c.ctx, c.stopper = ctx, stop
	c.genCtx, c.genCancel = context.WithCancel(ctx)
	c.mu.Unlock()
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
		admitted = c.admitSession(ctx)
		c.obs.Session(admitted)
		if !admitted {
			if !c.held() { // a held call stops when its hold ends (hold.go)
				c.stop(errRefused)
			}
			return
		}
		c.log.Info("call admitted")
		// The call becomes an owner at generation 1 of each turn stage
		// now, so that its first turn finds it there; a stage that fails
		// is tried again before the turn's work is submitted to it.
		for _, st := range c.turnStages() {
			if err := c.rotate(ctx, st, 1); err != nil {
				c.log.Warn("rotate", "stage", st.Name(), "generation", 1, "err", err)
			}
		}
		c.mu.Lock()
		c.advance(phaseTalking)
		c.talkLocked() // turns sent before this point
		lost := c.sessLost
		c.mu.Unlock()
		if lost != nil {
			lead.Go(func() { c.watchSessionLease(ctx, lost) })
		}
	})
	// Once the call is stopped: its admission and its conversation return
	// (both watch ctx), then the call is taken down.
	context.AfterFunc(ctx, func() {
		lead.Wait()
		c.mu.Lock()
		c.advance(phaseClosing)
		c.mu.Unlock()
		c.talk.Wait()
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
	// work loses its right to speak and keeps its lease until its backend
	// returns.
	c.mu.Lock()
	c.advance(phaseEnded)
	c.ans.Stop()
	c.genCancel()
	c.mu.Unlock()
	for _, st := range c.turnStages() {
		if err := st.Forget(c.ctx, c.id); err != nil {
			c.log.Warn("forget", "stage", st.Name(), "err", err)
		}
	}

	status, reason := closeStatus(cause)
	if errors.Is(cause, errRefused) || errors.Is(cause, tenant.ErrRateLimited) || errors.Is(cause, audiolimit.ErrRate) || errors.Is(cause, errSessionLost) {
		if c.caps.Closing != nil {
			c.caps.Closing(status) // its last line, if any, is kept before the close
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
	io.Go(func() { c.t.Close(status, reason); close(closed) })

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
	if status == wire.ClosePolicy { // the caller broke a rule: its handshake gets closeGrace
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
	end := endName(cause)
	c.s.m.Calls.WithLabelValues(end).Inc()
	c.s.m.NoteOutbound(c.out.MaxBytes())
	c.log.Info("call ended", "end", end, "stale_suppressed", c.out.Stale())
	c.observeEnd(end)
}

func closeStatus(cause error) (wire.CloseStatus, string) {
	switch {
	case errors.Is(cause, errRefused):
		return wire.CloseTryLater, "try again later"
	case errors.Is(cause, errSessionLost):
		return wire.CloseTryLater, "session lease lost"
	case errors.Is(cause, ErrSlowReader):
		return wire.ClosePolicy, "slow reader"
	case errors.Is(cause, errGoingAway):
		return wire.CloseGoingAway, "server shutting down"
	case errors.Is(cause, tenant.ErrRateLimited):
		return wire.ClosePolicy, "rate limited"
	case errors.Is(cause, audiolimit.ErrRate):
		return wire.ClosePolicy, "audio rate"
	case errors.Is(cause, ErrTransferred):
		return wire.CloseTryLater, "transferred to a person"
	}
	return wire.CloseNormal, ""
}

func endName(cause error) string {
	switch {
	case errors.Is(cause, errRefused):
		return "refused"
	case errors.Is(cause, errSessionLost):
		return "lease_lost"
	case errors.Is(cause, ErrSlowReader):
		return "slow_reader"
	case errors.Is(cause, errGoingAway):
		return "going_away"
	case errors.Is(cause, errHangup):
		return "hangup"
	case errors.Is(cause, tenant.ErrRateLimited):
		return "rate_limited"
	case errors.Is(cause, audiolimit.ErrRate):
		return "audio_rate"
	case errors.Is(cause, ErrTransferred):
		return "transferred"
	}
	return "disconnected"
}

// admitSession offers the call to the session stage and waits while it is
// queued. It reports whether the call was admitted. A store that cannot
// take the call refuses it closed: the caller hears that the service is
// unavailable, never that it is busy.
func (c *Call) admitSession(ctx context.Context) bool {
	if !c.enterTenant(ctx) {
		return false
	}
	st := c.s.session
	if err := c.rotate(ctx, st, 1); err != nil {
		c.log.Error("session rotate", "err", err)
		c.refuseSession(ctx, stages.Closed)
		return false
	}
	job := stages.Job{ID: c.id, Owner: c.id, Generation: 1, Born: c.s.cfg.Clock.Now(), Tenant: tenant.CallerFrom(ctx).Tenant}
	tk, d, err := st.Submit(ctx, job)
	if err != nil {
		c.log.Error("session submit", "err", err)
		d = stages.Closed
	}
	if d != stages.Queued {
		c.refuseSession(ctx, d)
		return false
	}
	pos, _, _ := tk.Position(ctx)
	if pos > 0 {
		_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: stages.Queued, Session: c.id, Position: pos})
		c.s.refuse(ctx, Refusal{Call: c.id, Stage: StageSession, Disposition: stages.Queued, Position: pos}, c)
	}
	tick := clock.NewTicker(c.s.cfg.Clock, c.s.cfg.QueueUpdate)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-tk.Done():
			waiting = false
		case <-tick.C:
			if p, ok, _ := tk.Position(ctx); ok && p != pos {
				pos = p
				_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: stages.Queued, Session: c.id, Position: pos})
			}
		case <-ctx.Done():
			if _, err := st.Cancel(ctx, c.id); err != nil {
				c.log.Warn("cancel session", "err", err)
			}
			<-tk.Done()
			if d, _ := tk.Result(); d == stages.Admitted {
				return true // admitted as the caller left: run releases it
			}
			return false
		}
	}
	switch d, _ := tk.Result(); d {
	case stages.Admitted:
		c.mu.Lock()
		c.advance(phaseAdmitted)
		c.sessLost = tk.Lost()
		c.mu.Unlock()
		_ = c.Send(ctx, &wire.SessionMsg{Type: "session", Disposition: stages.Admitted, Session: c.id})
		return true
	default:
		c.refuseSession(ctx, d)
		return false
	}
}

// rotate brings st to generation gen for this call, unless it is there
// already. A store that answers that the call is already at or past gen
// (stages.ErrGeneration: another rotation got there first) has done what
// was asked. Any other error leaves the stage behind; the next work for
// this stage tries again first. It never runs under c.mu: in fleet mode it
// is a round trip to the store.
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
	c.refusing(true)
	c.s.refuse(ctx, Refusal{Call: c.id, Stage: StageSession, Disposition: d}, c)
	c.refusing(false)
}

// readLoop decodes client events until the caller is gone.
//
// It minds its goroutine's stack, which an idle call keeps for as long as
// it lasts. A reader waits for the next message deep in coder/websocket
// (about 1.7 KiB of stack under Conn.Read), so a transport that declares
// Capabilities.ReadNative (the WebSocket) is read in frames that hold no
// event (readNative) and the message is decoded and handled only once the
// wait has returned (handleMessage): the wait then
// fits a goroutine's starting stack (4 KiB). Decoding a JSON message does
// not (encoding/json alone takes about 2.2 KiB), and a stack that has grown
// never shrinks back while the wait uses that much of it; so after a text
// message the reader hands over to a fresh goroutine (on a starting stack)
// and ends, and a call that has gone quiet keeps a 4 KiB reader, not 8.
func (c *Call) readLoop(ctx context.Context, io *sync.WaitGroup) {
	for {
		var text bool
		var err error
		if c.caps.ReadNative != nil {
			text, err = c.readNative(ctx)
		} else {
			err = c.readEvent(ctx)
		}
		if err != nil {
			var pe *wire.ProtocolError
			if !errors.As(err, &pe) {
				c.stop(fmt.Errorf("%w: %w", errGone, err)) // err may say why (ErrTransferred)
				return
			}
			c.badInput(pe)
		}
		if text {
			io.Go(func() { c.readLoop(ctx, io) })
			return
		}
	}
}

// readEvent receives and handles one event of any Transport.
func (c *Call) readEvent(ctx context.Context) error {
	ev, err := c.t.Recv(ctx)
	if err != nil {
		return err
	}
	c.handle(ev)
	return nil
}

// readNative waits for a native message and handles it; its frame holds
// no event (readLoop). text reports a text message.
func (c *Call) readNative(ctx context.Context) (text bool, err error) {
	binary, data, err := c.caps.ReadNative(ctx)
	if err != nil {
		return false, err
	}
	return !binary, c.handleMessage(binary, data)
}

// handleMessage decodes and handles one native message. It is never
// inlined into readNative, whose frame would then hold the event while
// waiting for the next message.
//
//go:noinline
func (c *Call) handleMessage(binary bool, data []byte) error {
	ev, err := wire.DecodeMessage(binary, data)
	if err != nil {
		return err
	}
	c.handle(ev)
	return nil
}

func (c *Call) badInput(pe *wire.ProtocolError) {
	c.s.m.ProtocolErrs.WithLabelValues(pe.Code).Inc()
	_ = c.Send(c.ctx, &wire.ErrorMsg{Type: "error", Code: pe.Code, Message: pe.Message})
}

func (c *Call) handle(ev wire.ClientEvent) {
	c.mu.Lock()
	first := !c.greeted
	c.greeted = true
	admitted := c.phase >= phaseAdmitted
	c.mu.Unlock()
	switch ev.Kind {
	case wire.EventHello:
		if !first {
			c.badInput(wire.Errorf(wire.CodeOutOfOrder, "hello must be the first message"))
			return
		}
		c.mu.Lock()
		c.format, c.span = ev.Audio, spanOf(ev.FrameMS)
		c.mu.Unlock()
	case wire.EventTurn:
		if !admitted {
			c.badInput(wire.Errorf(wire.CodeNotAdmitted, "the session is not admitted yet"))
			return
		}
		if pe := c.enqueue(ev.Turn, nil, time.Time{}); pe != nil {
			c.badInput(pe)
		}
	case wire.EventSpeech:
		switch {
		case !admitted:
			c.badInput(wire.Errorf(wire.CodeNotAdmitted, "the session is not admitted yet"))
		case c.s.cfg.Recognizer == nil:
			c.badInput(wire.Errorf(wire.CodeUnsupported, "no recognizer: send turns as text"))
		default:
			sp := ev.Speech
			if pe := c.enqueue(ev.Turn, &sp, ev.SpeechEnd); pe != nil {
				c.badInput(pe)
			}
		}
	case wire.EventBargeIn:
		if admitted {
			c.bargeIn()
		}
	case wire.EventHangup:
		c.stop(errHangup)
	case wire.EventAudio:
		if c.audioAllowed(ev.Data) {
			c.hear(ev.Data, admitted)
		}
	case wire.EventOther:
		if !c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c) {
			c.badInput(wire.Errorf(wire.CodeUnknownType, "unknown message type %q", ev.Type))
		}
	}
}

// enqueue adds a turn behind the call's running and waiting turns. A
// speech turn is born when the caller stopped speaking.
func (c *Call) enqueue(r wire.TurnRequest, speech *backend.Audio, spoke time.Time) *wire.ProtocolError {
	if !c.allowTurn() {
		return nil // the call is ending: rate_limited
	}
	now := c.s.cfg.Clock.Now()
	born := now.Add(-r.Age())
	if speech != nil && !spoke.IsZero() && !spoke.After(now) {
		born = spoke
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase == phaseEnded {
		return nil
	}
	if c.inflight[r.ID] {
		return wire.Errorf(wire.CodeDuplicate, "turn %q is still in progress", r.ID)
	}
	if len(c.inflight) >= c.s.cfg.MaxTurnsInFlight {
		return wire.Errorf(wire.CodeTooManyTurns, "at most %d turns in flight per call", c.s.cfg.MaxTurnsInFlight)
	}
	c.seq++
	if r.ID == "" {
		r.ID = fmt.Sprintf("speech-%d", c.seq)
	}
	t := &turn{id: r.ID, seq: c.seq, gen: c.gen.Load(), ctx: c.genCtx, born: born,
		text: r.Text, speech: speech, format: c.format, span: c.span, done: make(chan struct{}), played: make(chan struct{})}
	t.obs.Init(&c.obs, t.id, t.gen, t.born, speech != nil, t.ctx, &t.silenced)
	c.inflight[r.ID] = true
	c.pending = append(c.pending, t)
	c.talkLocked()
	return nil
}

// bargeIn rotates the call's generation in every stage and tells the caller.
// The new generation is taken under c.mu; `interrupted` is queued and the
// stages are rotated after it is let go (a round trip each in fleet mode).
// A stage that cannot be rotated now is rotated again before the next
// turn's work is submitted to it (Call.rotate), and meanwhile the old
// generation's work on it has lost its right to speak here all the same.
func (c *Call) bargeIn() {
	at := c.s.cfg.Clock.Now()
	c.mu.Lock()
	if c.phase == phaseEnded {
		c.mu.Unlock()
		return
	}
	gen := c.gen.Add(1) // from here on, older frames are dropped
	stopOld := c.genCancel
	c.genCtx, c.genCancel = context.WithCancel(c.ctx)
	cancelled := []string{}
	speaking := c.speaking
	if speaking != nil && !speaking.ended.Load() {
		cancelled = append(cancelled, speaking.id)
	} else {
		speaking = nil
	}
	for _, t := range c.pending {
		cancelled = append(cancelled, t.id)
	}
	c.mu.Unlock()
	c.s.m.BargeIns.Inc()
	c.obs.BargeIn(gen, len(cancelled))
	msg := &wire.InterruptedMsg{Type: "interrupted", Generation: gen, Cancelled: cancelled}
	b := &outbound.Barge{Msg: msg, At: at}
	if speaking != nil {
		b.Speaking = speaking
	}
	_ = c.pushFrame(c.ctx, outbound.Frame{Msg: msg, Barge: b})
	// The old generation's work is cancelled in the stages and stops
	// after `interrupted` is queued, so that its cancelled dispositions
	// and turn_end follow it. (Its output is already dropped.)
	for _, st := range c.turnStages() {
		if err := c.rotate(c.ctx, st, gen); err != nil {
			c.log.Error("rotate", "stage", st.Name(), "generation", gen, "err", err)
		}
	}
	stopOld()
}

// talkLocked starts the conversation's goroutine when turns are pending,
// the call is talking and none runs. Called with c.mu held.
func (c *Call) talkLocked() {
	if c.phase != phaseTalking || c.conversing || len(c.pending) == 0 {
		return
	}
	c.conversing = true
	c.talk.Go(c.converse)
}

// converse runs the call's turns in order until none is pending (the next
// turn starts another converse). A turn that arrives while one runs waits
// behind it; a barge-in cancels both, and the next turn starts without
// waiting for the cancelled one's cleanup (whose leases stay held until
// its backends return). Turns still pending when the call is stopped meet
// their cancelled generation.
func (c *Call) converse() {
	for {
		t := c.next()
		if t == nil {
			return
		}
		if t.gen != c.gen.Load() {
			c.endTurn(t, stages.Cancelled.String(), "", "")
			continue
		}
		c.mu.Lock()
		c.speaking = t
		c.mu.Unlock()
		c.jobs.Go(func() { c.runTurn(t) })
		select {
		case <-t.done:
		case <-t.ctx.Done():
		}
		c.mu.Lock()
		if c.speaking == t {
			c.speaking = nil
		}
		c.mu.Unlock()
	}
}

// next takes the first pending turn; with none, the conversation's
// goroutine counts as ended and next returns nil.
func (c *Call) next() *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		c.pending, c.conversing = nil, false
		return nil
	}
	t := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	return t
}

// turnStages are the stages a turn passes, in order.
func (c *Call) turnStages() []*stage {
	return []*stage{c.s.recognize, c.s.model, c.s.synth}
}

// hear runs caller audio through voice activity detection: speech starting
// while a reply is being spoken barges in, and speech that ended becomes a
// speech turn (without a recognizer, caller audio is accepted and ignored).
func (c *Call) hear(b []byte, admitted bool) {
	// A refused call is heard only while its offer waits for an answer
	// in words (answer.go).
	if admitted && c.s.cfg.Recognizer == nil || !admitted && !c.listening() {
		return
	}
	if c.ears == nil {
		c.mu.Lock()
		f := c.format
		c.mu.Unlock()
		l, err := listen.New(f)
		if err != nil {
			c.badInput(wire.Errorf(wire.CodeBadField, "caller audio: %v", err))
			return
		}
		c.ears = l
	}
	start, utts, ago, err := c.ears.Feed(b)
	if err != nil {
		c.badInput(wire.Errorf(wire.CodeBadField, "caller audio: %v", err))
		return
	}
	if start && admitted {
		c.mu.Lock()
		speaking := c.speaking != nil && !c.speaking.ended.Load()
		c.mu.Unlock()
		if speaking {
			c.bargeIn()
		}
	}
	if len(utts) == 0 {
		return // (most frames: no clock read)
	}
	now := c.s.cfg.Clock.Now()
	for i, u := range utts {
		if len(u.Samples) == 0 {
			continue
		}
		if c.listening() && c.ans.Take(u, admitted, now.Add(-ago[i])) || !admitted {
			continue
		}
		if pe := c.enqueue(wire.TurnRequest{}, &u, now.Add(-ago[i])); pe != nil {
			c.badInput(pe)
		}
	}
}
