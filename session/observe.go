package session

import (
	"time"

	"github.com/frontdoorhq/frontdoor/session/internal/observe"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The call's log line per turn, its latency histograms and its trace live
// in package internal/observe; the engine calls it from one-line hooks in
// call.go, turn.go and stream.go, placed where the protocol already
// reports an outcome, so that what is logged and traced is what the
// caller was told.

func (c *Call) now() time.Time { return c.s.cfg.Clock.Now() }

// observeEnd closes the call's span (end, after its last line). A turn
// left pending when the call stopped (enqueued after the conversation
// stopped taking turns, before the call was marked ended) never ran and
// never got its turn_end; it is reported here as cancelled by the call's
// end, so that the log and the trace still have one end for every turn.
func (c *Call) observeEnd(end string) {
	c.mu.Lock()
	left := append([]*turn(nil), c.pending...)
	c.mu.Unlock()
	for _, t := range left {
		if t != nil && !t.ended.Load() {
			c.observeTurnEnd(t, stages.Cancelled.String(), "", "")
		}
	}
	c.obs.End(end, c.gen.Load())
}

// observeTurnEnd writes the turn's info line and closes its span
// (endTurn), with what the call knows of why it ended.
func (c *Call) observeTurnEnd(t *turn, disposition, st, kind string) {
	t.obs.End(observe.TurnEnd{Disposition: disposition, Stage: st, Kind: kind, Failed: disposition == wire.TurnFailed,
		BargedIn: t.gen < c.gen.Load(), CallEnded: c.ctx.Err() != nil, SynthUS: t.synthUS.Load(), SentUS: t.sentUS.Load()})
}
