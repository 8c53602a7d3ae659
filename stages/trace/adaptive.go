package trace

import (
	"time"

	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// AdaptiveReplay is a stage replayed under an adaptive slot limit. The
// rule is fed each replayed lease's hold (admission to release) as its
// latency: what the backend took in the recording. A replay cannot know
// how the backend's latency would have changed under another limit, so it
// answers "what would auto have done with the latencies that were seen",
// not "what would the backend have done under auto".
type AdaptiveReplay struct {
	Config   adaptive.Config `json:"config"`
	Moves    []LimitMove     `json:"moves"`
	Final    int             `json:"final"`
	Min, Max int             // the lowest and highest limit it set
	rule     *admit.Adaptive
	c        *admit.Controller
}

// LimitMove is one move of the replay's adaptive limit.
type LimitMove struct {
	At     *Time  `json:"at"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

func newAdaptiveReplay(c *admit.Controller, cfg adaptive.Config) (*AdaptiveReplay, error) {
	rule, err := admit.NewAdaptive(cfg)
	if err != nil {
		return nil, err
	}
	rule.Sync(c.Limits().Slots)
	if _, err := c.SetSlots(0, rule.Limit()); err != nil {
		return nil, err
	}
	n := rule.Limit()
	return &AdaptiveReplay{Config: rule.Config(), Final: n, Min: n, Max: n, rule: rule, c: c}, nil
}

// observe feeds one hold, ended at t, and moves the controller's limit
// when the rule does.
func (a *AdaptiveReplay) observe(t time.Time, hold time.Duration) {
	sn := a.c.Snapshot(t)
	from := sn.Limits.Slots
	n, changed := a.rule.Observe(t, hold, false, sn.Leased+sn.Queued)
	if !changed {
		return
	}
	if _, err := a.c.SetSlots(0, n); err != nil {
		return
	}
	a.Moves = append(a.Moves, LimitMove{At: at(t), From: from, To: n, Reason: a.rule.Estimate().Reason})
	a.Final, a.Min, a.Max = n, min(a.Min, n), max(a.Max, n)
}
