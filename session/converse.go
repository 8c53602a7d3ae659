package session

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The conversation, as the call's owner runs it (owner.go): turns are
// accepted in order, run one at a time in that order, and a barge-in
// ends every one of them at once. Every function here runs on the owner.

// turnIn takes a turn, or tells the caller why not.
func (c *Call) turnIn(r wire.TurnRequest, speech *backend.Audio, spoke time.Time) {
	if pe := c.enqueue(r, speech, spoke); pe != nil {
		c.badInput(pe)
	}
}

// enqueue adds a turn behind the call's running and waiting turns. A
// speech turn is born when the caller stopped speaking.
func (c *Call) enqueue(r wire.TurnRequest, speech *backend.Audio, spoke time.Time) *wire.ProtocolError {
	if c.o.phase == phaseEnded || !c.allowTurn() {
		return nil // the call is ending (or now: rate_limited)
	}
	now := c.s.cfg.Clock.Now()
	born := now.Add(-r.Age())
	if speech != nil && !spoke.IsZero() && !spoke.After(now) {
		born = spoke
	}
	if c.o.inflight[r.ID] {
		return wire.Errorf(wire.CodeDuplicate, "turn %q is still in progress", r.ID)
	}
	if len(c.o.inflight) >= c.s.cfg.MaxTurnsInFlight {
		return wire.Errorf(wire.CodeTooManyTurns, "at most %d turns in flight per call", c.s.cfg.MaxTurnsInFlight)
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
	return nil
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
	c.jobs.Go(func() { c.runTurn(t) })
}

// bargeIn rotates the call's generation and tells the caller; at is when
// the barge-in came. The generation advances before `interrupted` is
// queued, so no frame of the old one follows it; then every stage is
// rotated (a round trip each in fleet mode) and the old generation's
// context is cancelled, so that its cancelled dispositions and turn_end
// follow `interrupted`. A stage that cannot be rotated now is rotated
// again before the next turn's work is submitted to it (Call.rotate), and
// meanwhile the old generation's work on it has lost its right to speak
// here all the same. The speaking turn's goroutine ends it once its
// backends have returned (their leases held until then); the next turn
// does not wait for that.
func (c *Call) bargeIn(at time.Time) {
	if c.o.phase == phaseEnded {
		return
	}
	gen := c.gen.Add(1) // from here on, older frames are dropped
	stopOld := c.o.genCancel
	c.o.genCtx, c.o.genCancel = context.WithCancel(c.ctx)
	cancelled := []string{}
	speaking := c.o.speaking
	if speaking != nil {
		cancelled = append(cancelled, speaking.id)
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
	for _, st := range c.turnStages() {
		if err := c.rotate(c.ctx, st, gen); err != nil {
			c.log.Error("rotate", "stage", st.Name(), "generation", gen, "err", err)
		}
	}
	stopOld()
	c.o.speaking = nil
	c.dropPending()
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

// turnStages are the stages a turn passes, in order.
func (c *Call) turnStages() []*stage {
	return []*stage{c.s.recognize, c.s.model, c.s.synth}
}
