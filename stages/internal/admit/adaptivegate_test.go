package admit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// TestAdaptiveGateLocal: an adaptive gate on the in-process store probes up
// while the backend is fast and the stage busy, cuts on an overload error,
// reports every move, and shows its state in the snapshot, also through a
// Guard (which forwards Observe).
func TestAdaptiveGateLocal(t *testing.T) {
	d, clock := newDispatcher(t, admit.Limits{Slots: 2, Waiting: 64, MaxAge: time.Hour})
	ctx := context.Background()
	var moves []admit.LimitChange
	ag, err := admit.NewAdaptiveGate(ctx, admit.LocalGate(d), admit.AdaptiveConfig{Min: 2, Max: 16, Window: time.Second},
		clock, func(c admit.LimitChange) { moves = append(moves, c) })
	if err != nil {
		t.Fatal(err)
	}
	g := admit.Guard(ag, func() bool { return false })
	if err := g.Rotate(ctx, "o", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // demand well over the limit
		if _, disp, err := g.Submit(ctx, admit.Job{ID: fmt.Sprint("j", i), Owner: "o", Generation: 1, Born: clock.Now()}); err != nil || disp != admit.Queued {
			t.Fatal(disp, err)
		}
	}
	obs := g.(admit.Observer)
	for range 3 { // three fast windows
		for range 5 {
			obs.Observe(100*time.Millisecond, false)
		}
		clock.Advance(time.Second)
	}
	obs.Observe(100*time.Millisecond, false)
	sn, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Limits.Slots <= 2 || sn.Leased != sn.Limits.Slots || sn.Adaptive == nil || sn.Adaptive.Estimate.Reason != "probe" {
		t.Fatalf("after fast windows: slots %d leased %d adaptive %+v", sn.Limits.Slots, sn.Leased, sn.Adaptive)
	}
	up := sn.Limits.Slots
	obs.Observe(0, true) // a 429
	clock.Advance(time.Second)
	obs.Observe(100*time.Millisecond, false)
	sn, _ = g.Snapshot(ctx)
	if want := max(2, int(float64(up)*0.7)); sn.Limits.Slots > want || sn.Leased != up {
		t.Fatalf("after an overload: slots %d (want <= %d), leased %d (want %d: nothing revoked)", sn.Limits.Slots, want, sn.Leased, up)
	}
	if len(moves) == 0 || moves[len(moves)-1].To != sn.Limits.Slots || uint64(len(moves)) != sn.Adaptive.Changes {
		t.Fatalf("moves %+v, changes %d", moves, sn.Adaptive.Changes)
	}
}
