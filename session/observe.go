package session

import (
	"time"

	"github.com/frontdoorhq/frontdoor/session/internal/observe"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// The call's log line per turn, its latency histograms and its trace live
// in package internal/observe; the engine calls it from one-line hooks in
// call.go, turn.go and stream.go, placed where the protocol already
// reports an outcome, so that what is logged and traced is what the
// caller was told.

func (c *Call) now() time.Time { return c.s.cfg.Clock.Now() }

// observeEnd closes the call's span (end, after its last line). Every
// turn has had its end by then: a turn still pending when the call
// stopped ended cancelled on the owner (stopOwner).
func (c *Call) observeEnd(end string) {
	c.obs.End(end, c.gen.Load())
}

// observeTurnEnd writes the turn's info line and closes its span
// (endTurn), with what the call knows of why it ended.
func (c *Call) observeTurnEnd(t *turn, disposition, st, kind string) {
	t.obs.End(observe.TurnEnd{Disposition: disposition, Stage: st, Kind: kind, Failed: disposition == wire.TurnFailed,
		BargedIn: t.gen < c.gen.Load(), CallEnded: c.ctx.Err() != nil, SynthUS: t.synthUS.Load(), SentUS: t.sentUS.Load()})
}
