package admit_test

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// OnResolve is told of every outcome once the dispatcher's lock is free:
// the hook may call the dispatcher again, from an operation (a claim) and
// from the timer (an expiry).
func TestOnResolveOutsideTheLock(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	c, err := admit.New(admit.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var d *admit.Dispatcher
	var told []string
	d = admit.NewDispatcher(c, clock, admit.ClaimOnly(), admit.OnResolve(func(id string, disp admit.Disposition) {
		told = append(told, id+" "+disp.String())
		d.Controller().Snapshot(clock.Now()) // re-entering must not deadlock
		if _, _, err := d.Claim(""); err != nil {
			t.Error(err)
		}
	}))
	defer d.Stop()
	for _, o := range []string{"a", "b"} {
		if err := d.Rotate(o, 1); err != nil {
			t.Fatal(err)
		}
		if _, disp, err := d.Submit(admit.Job{ID: o, Owner: o, Generation: 1, Born: clock.Now()}); err != nil || disp != admit.Queued {
			t.Fatalf("Submit(%s) = %v, %v", o, disp, err)
		}
	}
	if disp, id, err := d.Claim(""); err != nil || disp != admit.Admitted || id != "a" {
		t.Fatalf("Claim = %v %q, %v", disp, id, err)
	}
	clock.Advance(2 * time.Second) // b expires by the timer
	want := []string{"a admitted", "b expired"}
	if len(told) != len(want) || told[0] != want[0] || told[1] != want[1] {
		t.Fatalf("told %q, want %q", told, want)
	}
}
