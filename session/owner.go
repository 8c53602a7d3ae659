package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// own is the state only the call's owner touches, with no lock (doc.go,
// "One owner per call").
type own struct {
	phase     phase
	genCtx    context.Context // cancelled when the generation rotates
	genCancel context.CancelFunc
	pending   []*turn // accepted, waiting for the turn before them
	speaking  *turn   // the turn running, until its goroutine returns or a barge-in
	inflight  map[string]bool
	seq       uint64
}

type eventKind uint8

const (
	evClient    eventKind = iota // turn, speech, barge_in or hangup, from the reader
	evHeard                      // an utterance heard in the caller's audio: a speech turn
	evVoice                      // the caller started to speak: a barge-in if a turn runs
	evAdmitted                   // the session stage admitted the call
	evTalking                    // the turn stages are at generation 1: turns may run
	evTurnEnded                  // a turn's goroutine ended it (its turn_end follows)
	evTurnDone                   // a turn's goroutine returned: the next turn may start
	evEnd                        // the call stopped: nothing starts any more
)

// event is one message to the call's owner.
type event struct {
	kind eventKind
	ev   wire.ClientEvent // evClient; evHeard: its Speech
	turn *turn            // evTurnEnded, evTurnDone
	at   time.Time        // a barge-in: when it came; evHeard: when the caller stopped speaking
	gone chan struct{}    // evEnd: closed once the owner has stopped
}

// mailbox is a call's queue of events; its mutex guards the queue alone.
type mailbox struct {
	mu      sync.Mutex
	q       []event
	running bool          // a goroutine is the owner: it drains q
	closed  bool          // evEnd was applied: later events are dropped
	gone    chan struct{} // evEnd's: closed once the owner applied the last event
}

// post gives e to the call's owner. With none, the poster is the owner
// until the mailbox is empty (no hand-over: the reader's barge-in is
// applied at once, on the reader, as before); with one, e is queued for
// it and post returns at once. After the call's end, e is dropped.
func (c *Call) post(e event) {
	b := &c.box
	b.mu.Lock()
	if b.closed || b.running {
		if !b.closed {
			b.q = append(b.q, e)
		}
		b.mu.Unlock()
		return
	}
	b.running = true // the queue is empty: e is first
	b.mu.Unlock()
	for ok := true; ok; e, ok = b.take() {
		c.apply(&e)
	}
}

// take removes the next event; with none, the owner counts as stopped and
// take reports false.
func (b *mailbox) take() (event, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.q) == 0 {
		b.q, b.running = nil, false // an idle call keeps no queue
		if b.closed {
			close(b.gone)
		}
		return event{}, false
	}
	e := b.q[0]
	b.q[0] = event{}
	b.q = b.q[1:]
	return e, true
}

// apply is the owner's step: e applied to the call's state.
func (c *Call) apply(e *event) {
	switch e.kind {
	case evClient:
		c.client(e.ev, e.at)
	case evHeard:
		sp := e.ev.Speech // (a copy of its own: e stays on the owner's stack)
		c.turnIn(wire.TurnRequest{}, &sp, e.at)
	case evVoice:
		if c.o.phase >= phaseAdmitted && c.o.speaking != nil && !c.o.speaking.ended {
			c.bargeIn(e.at)
		}
	case evAdmitted:
		c.advance(phaseAdmitted)
	case evTalking:
		c.advance(phaseTalking)
		c.talk()
	case evTurnEnded:
		delete(c.o.inflight, e.turn.id)
		e.turn.ended = true
	case evTurnDone:
		if c.o.speaking == e.turn {
			c.o.speaking = nil
			c.talk()
		}
	case evEnd:
		c.stopOwner(e.gone)
	}
}

// client applies a client event the reader passed on.
func (c *Call) client(ev wire.ClientEvent, at time.Time) {
	admitted := c.o.phase >= phaseAdmitted
	switch ev.Kind {
	case wire.EventTurn, wire.EventSpeech:
		var speech *backend.Audio
		if ev.Kind == wire.EventSpeech {
			sp := ev.Speech
			speech = &sp
		}
		switch {
		case !admitted:
			c.badInput(wire.Errorf(wire.CodeNotAdmitted, "the session is not admitted yet"))
		case speech != nil && c.s.cfg.Recognizer == nil:
			c.badInput(wire.Errorf(wire.CodeUnsupported, "no recognizer: send turns as text"))
		default:
			c.turnIn(ev.Turn, speech, ev.SpeechEnd)
		}
	case wire.EventBargeIn:
		if admitted {
			c.bargeIn(at)
		}
	case wire.EventHangup:
		c.stop(errHangup)
	}
}

// stopOwner ends the conversation (evEnd): no turn and no barge-in is
// taken from now on, the turns still pending end cancelled without having
// run, the speaking one loses its generation (its goroutine ends it once
// its backends returned), and the mailbox takes no more events.
func (c *Call) stopOwner(gone chan struct{}) {
	c.advance(phaseEnded)
	c.ans.Stop()
	c.o.genCancel()
	c.o.speaking = nil
	c.dropPending()
	c.box.mu.Lock()
	c.box.closed, c.box.gone = true, gone
	c.box.mu.Unlock()
}

// turnIn adds a turn behind the call's running and waiting turns, or
// tells the caller why not. A speech turn is born when the caller stopped
// speaking.
func (c *Call) turnIn(r wire.TurnRequest, speech *backend.Audio, spoke time.Time) {
	if c.o.phase == phaseEnded || !c.allowTurn() {
		return // the call is ending (or now: rate_limited)
	}
	if c.o.inflight[r.ID] {
		c.badInput(wire.Errorf(wire.CodeDuplicate, "turn %q is still in progress", r.ID))
		return
	}
	if len(c.o.inflight) >= c.s.cfg.MaxTurnsInFlight {
		c.badInput(wire.Errorf(wire.CodeTooManyTurns, "at most %d turns in flight per call", c.s.cfg.MaxTurnsInFlight))
		return
	}
	now := c.s.cfg.Clock.Now()
	born := now.Add(-r.Age())
	if speech != nil && !spoke.IsZero() && !spoke.After(now) {
		born = spoke
	}
	c.o.seq++
	if r.ID == "" {
		r.ID = fmt.Sprintf("speech-%d", c.o.seq)
	}
	f := c.replyFormat()
	t := &turn{id: r.ID, seq: c.o.seq, gen: c.gen.Load(), ctx: c.o.genCtx, born: born,
		text: r.Text, speech: speech, format: f.Format, span: f.span, played: make(chan struct{})}
	t.obs.Init(&c.obs, t.id, t.gen, t.born, speech != nil, t.ctx, &t.silenced)
	c.o.inflight[r.ID] = true
	c.o.pending = append(c.o.pending, t)
	c.talk()
}

// talk starts the first pending turn when the call is talking and no turn
// runs. A call that is stopping starts nothing: its pending turns end
// cancelled with it (stopOwner).
func (c *Call) talk() {
	if c.o.phase != phaseTalking || c.o.speaking != nil || len(c.o.pending) == 0 || c.ctx.Err() != nil {
		return
	}
	t := c.o.pending[0]
	c.o.pending[0] = nil
	c.o.pending = c.o.pending[1:]
	if len(c.o.pending) == 0 {
		c.o.pending = nil
	}
	c.o.speaking = t
	c.jobs.Go(func() {
		c.runTurn(t)
		c.post(event{kind: evTurnDone, turn: t})
	})
}

// bargeIn rotates the call's generation (at: when the barge-in came). The
// generation advances before `interrupted` is queued, so no older frame
// follows it; then the stages are rotated (a stage that fails is rotated
// again before its next work: Call.rotate) and the old generation's
// context is cancelled, so its cancelled dispositions and turn_end follow
// `interrupted`. The speaking turn's goroutine ends it once its backends
// have returned; the next turn does not wait for that.
func (c *Call) bargeIn(at time.Time) {
	if c.o.phase == phaseEnded {
		return
	}
	gen := c.gen.Add(1) // from here on, older frames are dropped
	stopOld := c.o.genCancel
	c.o.genCtx, c.o.genCancel = context.WithCancel(c.ctx)
	cancelled := []string{}
	speaking := c.o.speaking
	if speaking != nil && !speaking.ended {
		cancelled = append(cancelled, speaking.id)
	} else {
		speaking = nil
	}
	for _, t := range c.o.pending {
		cancelled = append(cancelled, t.id)
	}
	c.s.m.BargeIns.Inc()
	c.obs.BargeIn(gen, len(cancelled))
	msg := &wire.InterruptedMsg{Type: "interrupted", Generation: gen, Cancelled: cancelled}
	b := &outbound.Barge{Msg: msg, At: at}
	if speaking != nil {
		b.Speaking = speaking
	}
	_ = c.pushFrame(c.ctx, outbound.Frame{Msg: msg, Barge: b})
	for _, st := range c.s.turnStages() {
		if err := c.rotate(c.ctx, st, gen); err != nil {
			c.log.Error("rotate", "stage", st.Name(), "generation", gen, "err", err)
		}
	}
	c.o.speaking = nil
	c.dropPending() // their turn_end first: the speaking turn's comes once its backends returned
	stopOld()
	c.talk()
}

// dropPending ends the turns still waiting, cancelled: they never ran, so
// no stage holds anything of theirs.
func (c *Call) dropPending() {
	for _, t := range c.o.pending {
		delete(c.o.inflight, t.id)
		c.reportTurnEnd(t, stages.Cancelled.String(), "", "")
	}
	c.o.pending = nil
}
