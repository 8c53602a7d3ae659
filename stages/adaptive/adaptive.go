// Package adaptive moves a stage's slot limit by what the backend shows:
// the latency of each stage's useful signal (first token, first audio, a
// result) and its overload errors (429, 503). The limit probes up while
// latency stays near the measured minimum and backs off when the backend
// queues or refuses, between the bounds a Config sets.
//
// New decorates any stages.Gate with a runtime slot limit: the in-process
// gate stages.NewGate builds, or redisstage's, whose one limit in Redis
// the whole fleet moves by compare and set.
package adaptive

import (
	"context"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Config bounds and paces an adaptive slot limit: Min and Max bound it,
// Initial starts it (0: Min), and Window, MinSamples, Tolerance, Backoff
// and MinWindows pace the rule (their zero values choose the defaults).
type Config = admit.AdaptiveConfig

// Change is one move of an adaptive limit (From, To and the rule's
// Estimate), for the log and metrics.
type Change = admit.LimitChange

// New returns g, which must have a runtime slot limit (the gates
// stages.NewGate and redisstage build do), with that limit moved by the
// adaptive rule cfg on clk (nil: clock.System). The limit g's store holds
// is adopted, clamped to the bounds, so a replica joining a fleet starts
// from the fleet's limit. onChange, if not nil, is told of every move; it
// must not call back into the gate. The gate takes the latency of each
// stage's useful signal through a method Observe(time.Duration, bool), and
// reports its rule in stages.Snapshot.Adaptive.
func New(ctx context.Context, g stages.Gate, cfg Config, clk clock.Clock, onChange func(Change)) (stages.Gate, error) {
	a, err := admit.NewAdaptiveGate(ctx, g, cfg, clk, onChange)
	if err != nil {
		return nil, err
	}
	return a, nil
}
