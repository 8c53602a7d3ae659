package admit_test

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestAlarm(t *testing.T) {
	clock := stagestest.NewClock(t0)
	var a admit.Alarm
	var fired []uint64
	fire := func(seq uint64) {
		if a.Fired(seq) {
			fired = append(fired, seq)
		}
	}
	a.Set(clock, t0.Add(time.Second), t0, fire)
	a.Set(clock, t0.Add(time.Second), t0, fire) // same deadline: not re-armed
	if clock.Pending() != 1 {
		t.Fatalf("%d timers pending, want 1", clock.Pending())
	}
	a.Set(clock, t0.Add(2*time.Second), t0, fire) // the deadline moved
	clock.Advance(3 * time.Second)
	if len(fired) != 1 || fired[0] != 2 {
		t.Fatalf("fired %v, want only the second arming", fired)
	}
	if a.Fired(2) {
		t.Fatal("an alarm fired twice")
	}
	a.Set(clock, t0.Add(4*time.Second), t0.Add(3*time.Second), fire)
	a.Clear()
	clock.Advance(2 * time.Second)
	if len(fired) != 1 || clock.Pending() != 0 {
		t.Fatalf("a cleared alarm fired: %v, %d pending", fired, clock.Pending())
	}
}
