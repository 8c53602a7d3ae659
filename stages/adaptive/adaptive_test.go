package adaptive_test

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestNewObserves: New's gate takes observations
// through Observe (what the engine looks for) and shows its rule in the
// snapshot; a gate without a runtime slot limit is refused.
func TestNewObserves(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	g, err := stages.NewGate(stages.Limits{Slots: 4, Waiting: 4, MaxAge: time.Second}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := adaptive.New(ctx, g, adaptive.Config{Min: 2, Max: 8}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Stop()
	if _, ok := ag.(interface{ Observe(time.Duration, bool) }); !ok {
		t.Fatalf("%T takes no observations", ag)
	}
	sn, err := ag.Snapshot(ctx)
	if err != nil || sn.Adaptive == nil || sn.Adaptive.Config.Min != 2 || sn.Adaptive.Config.Max != 8 {
		t.Fatalf("snapshot %+v, %v", sn.Adaptive, err)
	}
	if _, err := adaptive.New(ctx, noLimit{g}, adaptive.Config{Min: 1, Max: 2}, clk, nil); err == nil {
		t.Fatalf("a gate without a slot limit: %v", err)
	}
}

// noLimit hides the gate's runtime slot limit.
type noLimit struct{ stages.Gate }
