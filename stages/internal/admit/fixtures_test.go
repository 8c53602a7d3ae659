package admit

import (
	"errors"
	"testing"
	"time"
)

func owners(t *testing.T, c *Controller, gen uint64, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := c.Rotate(id, gen, t0); err != nil {
			t.Fatal(err)
		}
	}
}

// Hold every lease, fill the queue, offer one more: the extra is refused
// without being retained, and one release admits exactly one waiter.
func TestFixtureOverload(t *testing.T) {
	c := mustNew(t, Limits{Slots: 2, Waiting: 2, MaxAge: time.Minute})
	owners(t, c, 1, "a", "b", "c", "d", "e")
	wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("b1", "b", 1, 0), 0, Queued)
	wantTake(t, c, 0, Admitted, "a1")
	wantTake(t, c, 0, Admitted, "b1")
	wantOffer(t, c, job("c1", "c", 1, 0), 0, Queued)
	wantOffer(t, c, job("d1", "d", 1, 0), 0, Queued)
	wantOffer(t, c, job("e1", "e", 1, 0), 0, Overloaded)
	if _, ok := c.State("e1"); ok {
		t.Fatal("overloaded job was retained")
	}
	wantTake(t, c, 0, Busy, "")
	wantRelease(t, c, "a1", Completed)
	wantTake(t, c, 1, Admitted, "c1")
	wantTake(t, c, 1, Busy, "")
	if s := c.Snapshot(t0); s.Queued != 1 || s.Leased != 2 {
		t.Fatalf("queued %d leased %d", s.Queued, s.Leased)
	}
	checkLedger(t, c)
}

// Busy capacity beyond the head's budget: Take reports that specific expired
// identity, and the empty queue afterwards is a separate observation.
func TestFixtureExpiry(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 3, MaxAge: 2 * time.Second})
	owners(t, c, 1, "a", "b")
	wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("b1", "b", 1, 0), 0, Queued)
	wantTake(t, c, 0, Admitted, "a1")
	wantTake(t, c, 2, Busy, "") // equal age is still eligible
	wantTake(t, c, 2.001, Expired, "b1")
	wantTake(t, c, 3, Empty, "")
	if s, _ := c.State("b1"); s != Expired {
		t.Fatalf("State(b1) = %v", s)
	}
	// The expired identity cannot come back as fresh work.
	if _, err := c.Offer(job("b1", "b", 1, 3), at(3)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("re-offer of expired identity: %v", err)
	}
	wantRelease(t, c, "a1", Completed)
	checkLedger(t, c)
}

// Rotating one owner while another's work waits: the cancelled owner's queued
// ticket leaves at once, its active lease stays until cleanup, and the other
// owner proceeds only once a genuine slot frees.
func TestFixtureCancellationWithDelayedCleanup(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute})
	owners(t, c, 1, "a", "b")
	wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("a2", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("b1", "b", 1, 0), 0, Queued)
	wantTake(t, c, 0, Admitted, "a1")
	if err := c.Rotate("a", 2, at(1)); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.State("a2"); s != Cancelled {
		t.Fatalf("State(a2) = %v", s)
	}
	s := c.Snapshot(at(4))
	if s.Queued != 1 || s.Leased != 1 || s.CleanupPending != 1 || s.OldestCleanup != 3*time.Second {
		t.Fatalf("snapshot %+v", s)
	}
	wantTake(t, c, 5, Busy, "") // cleanup still pending: b1 must wait
	wantRelease(t, c, "a1", Cancelled)
	if s := c.Snapshot(t0); s.CleanupPending != 0 {
		t.Fatalf("cleanup pending after release: %d", s.CleanupPending)
	}
	wantTake(t, c, 6, Admitted, "b1")
	wantRelease(t, c, "b1", Completed)
	checkLedger(t, c)
}

// A drained generation keeps its ordering history: an older Born delivered
// after the queue emptied is still out of order; a rotation resets it.
func TestFixtureOrderingAfterDrain(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	owners(t, c, 1, "a")
	wantOffer(t, c, job("a1", "a", 1, 5), 5, Queued)
	wantTake(t, c, 5, Admitted, "a1")
	wantRelease(t, c, "a1", Completed)
	wantTake(t, c, 6, Empty, "")
	wantOffer(t, c, job("late", "a", 1, 4), 6, OutOfOrder)
	wantOffer(t, c, job("tie", "a", 1, 5), 6, Queued)
	owners(t, c, 2, "a")
	wantOffer(t, c, job("fresh", "a", 2, 1), 6, Queued)
	checkLedger(t, c)
}

// Closing intake with work active: new offers are closed, existing cleanup
// stays possible, and reopening is an explicit operation.
func TestFixtureClosedAdmission(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	owners(t, c, 1, "a")
	wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("a2", "a", 1, 0), 0, Queued)
	wantTake(t, c, 0, Admitted, "a1")
	c.Close()
	wantOffer(t, c, job("a3", "a", 1, 0), 0, Closed)
	wantRelease(t, c, "a1", Completed)
	wantTake(t, c, 1, Admitted, "a2") // queued work already accepted still runs
	wantTake(t, c, 1, Closed, "")
	wantRelease(t, c, "a2", Completed)
	c.Reopen()
	wantOffer(t, c, job("a4", "a", 1, 1), 1, Queued)
	checkLedger(t, c)
}

func TestForget(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	owners(t, c, 1, "a")
	wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
	wantOffer(t, c, job("a2", "a", 1, 0), 0, Queued)
	wantTake(t, c, 0, Admitted, "a1")
	c.Forget("a", t0)
	if _, ok := c.Generation("a"); ok {
		t.Fatal("generation survived Forget")
	}
	if s, _ := c.State("a2"); s != Cancelled {
		t.Fatalf("queued work after Forget: %v", s)
	}
	if s := c.Snapshot(t0); s.Leased != 1 || s.CleanupPending != 1 || s.Queued != 0 {
		t.Fatalf("snapshot after Forget: %+v", s)
	}
	wantOffer(t, c, job("a3", "a", 1, 0), 0, Stale)
	wantRelease(t, c, "a1", Cancelled)
	c.Forget("never-seen", t0) // a no-op, not a panic
	checkLedger(t, c)
}

func TestBoundaries(t *testing.T) {
	tests := []struct {
		name      string
		maxAge    time.Duration
		born, now float64
		want      Disposition
	}{
		{"age equal to max is eligible", 2 * time.Second, 0, 2, Queued},
		{"age one nanosecond over max expires", 2 * time.Second, 0, 2.000000001, Expired},
		{"zero max age admits only age zero", 0, 1, 1, Queued},
		{"zero max age expires any age", 0, 1, 1.000000001, Expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustNew(t, Limits{Slots: 1, Waiting: 1, MaxAge: tt.maxAge})
			owners(t, c, 1, "a")
			got, err := c.Offer(job("x", "a", 1, tt.born), at(tt.now))
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	t.Run("take at the boundary", func(t *testing.T) {
		c := mustNew(t, Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
		owners(t, c, 1, "a")
		wantOffer(t, c, job("x", "a", 1, 0), 0, Queued)
		wantTake(t, c, 1, Admitted, "x")
	})
	t.Run("take before born is an error", func(t *testing.T) {
		c := mustNew(t, Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
		owners(t, c, 1, "a")
		wantOffer(t, c, job("x", "a", 1, 5), 5, Queued)
		if _, _, err := c.Take(at(4)); !errors.Is(err, ErrClock) {
			t.Fatalf("Take before born: %v", err)
		}
	})
}

func TestInvalidInput(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
	owners(t, c, 1, "a")
	bad := []Job{
		{ID: "", Owner: "a", Generation: 1, Born: at(0)},
		{ID: "x", Owner: "", Generation: 1, Born: at(0)},
		{ID: "x", Owner: "a", Generation: 1},
		{ID: "x", Owner: "a", Generation: 1, Born: at(1)},
	}
	for _, j := range bad {
		if d, err := c.Offer(j, at(0)); !errors.Is(err, ErrJob) {
			t.Errorf("Offer(%+v) = %v, %v; want ErrJob", j, d, err)
		}
	}
	if err := c.Rotate("", 1, t0); !errors.Is(err, ErrGeneration) {
		t.Errorf("Rotate with empty owner: %v", err)
	}
	if err := c.Rotate("a", 0, t0); !errors.Is(err, ErrGeneration) {
		t.Errorf("Rotate backwards: %v", err)
	}
	if _, err := c.Release("nobody"); !errors.Is(err, ErrNoLease) {
		t.Errorf("Release unknown: %v", err)
	}
	wantOffer(t, c, job("q", "a", 1, 0), 0, Queued)
	if _, err := c.Release("q"); !errors.Is(err, ErrNoLease) {
		t.Errorf("Release of queued work: %v", err)
	}
	if s := c.Snapshot(t0); s.Ledger.Offered != 1 {
		t.Errorf("invalid offers were counted: %+v", s.Ledger)
	}
}

func TestDispositionNames(t *testing.T) {
	want := []string{"queued", "admitted", "overloaded", "expired", "stale", "out-of-order", "closed", "busy", "empty", "active", "cancelled", "completed", "failed"}
	for i, d := range Dispositions() {
		if d.String() != want[i] {
			t.Errorf("%d: %q, want %q", i, d, want[i])
		}
		b, _ := d.MarshalText()
		var back Disposition
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Errorf("round trip %v: %v %v", d, back, err)
		}
	}
	if Disposition(0).String() != "invalid" {
		t.Error("zero disposition should be invalid")
	}
}

func TestHandoffKeepsDeadline(t *testing.T) {
	from := Job{ID: "turn-1/model", Owner: "call", Generation: 3, Born: at(1), Tenant: "acme"}
	got := from.Next("turn-1/synthesis")
	want := Job{ID: "turn-1/synthesis", Owner: "call", Generation: 3, Born: at(1), Tenant: "acme"}
	if got != want {
		t.Fatalf("Handoff = %+v, want %+v", got, want)
	}
}
