package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
)

// A model backend answers 429: the window that saw it cuts the stage's
// slot limit by the backoff, and the server is told of the move.
func ExampleNew() {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	g, err := stages.NewGate(stages.Limits{Slots: 8, Waiting: 16, MaxAge: time.Second}, clk, nil)
	if err != nil {
		panic(err)
	}
	cfg := adaptive.Config{Min: 2, Max: 16, Initial: 8, Window: time.Second}
	ag, err := adaptive.New(ctx, g, cfg, clk, func(c adaptive.Change) {
		fmt.Printf("limit %d -> %d\n", c.From, c.To)
	})
	if err != nil {
		panic(err)
	}
	defer ag.Stop()

	obs := ag.(interface{ Observe(time.Duration, bool) })
	obs.Observe(0, true) // the backend refused: overloaded
	clk.Advance(time.Second)
	obs.Observe(300*time.Millisecond, false) // the next window begins

	s, _ := ag.Snapshot(ctx)
	fmt.Println("slots now:", s.Limits.Slots)
	// Output:
	// limit 8 -> 5
	// slots now: 5
}
