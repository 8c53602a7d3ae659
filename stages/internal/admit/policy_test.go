package admit

import (
	"testing"
	"time"
)

// The baselines behave as the designs they stand for, and the ledger still
// balances under each of them.
func TestPolicies(t *testing.T) {
	l := Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	run := func(t *testing.T, p Policy) *Controller {
		c, err := New(l, WithPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		owners(t, c, 1, "a", "b")
		return c
	}
	t.Run("frontdoor bounds the queue", func(t *testing.T) {
		c := run(t, Frontdoor)
		wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
		wantOffer(t, c, job("a2", "a", 1, 0), 0, Overloaded)
	})
	t.Run("unbounded admits everything at any age", func(t *testing.T) {
		c := run(t, Unbounded)
		for i := range 100 {
			wantOffer(t, c, job(string(rune('A'+i)), "a", 1, 0), 50, Queued)
		}
		for i := range 100 {
			wantTake(t, c, 50, Admitted, string(rune('A'+i)))
		}
		if s := c.Snapshot(t0); s.Leased != 100 || s.Policy != Unbounded {
			t.Fatalf("%+v", s)
		}
		checkLedger(t, c)
	})
	t.Run("semaphore limits concurrency only", func(t *testing.T) {
		c := run(t, Semaphore)
		for _, id := range []string{"x", "y", "z"} {
			wantOffer(t, c, job(id, "a", 1, 0), 0, Queued)
		}
		wantTake(t, c, 60, Admitted, "x")
		wantTake(t, c, 60, Busy, "") // y is a minute old and still waits
		wantRelease(t, c, "x", Completed)
		wantTake(t, c, 60, Admitted, "y")
		checkLedger(t, c)
	})
	t.Run("release-on-cancel over-admits", func(t *testing.T) {
		c := run(t, ReleaseOnCancel)
		wantOffer(t, c, job("a1", "a", 1, 0), 0, Queued)
		wantTake(t, c, 0, Admitted, "a1")
		wantOffer(t, c, job("b1", "b", 1, 0), 0, Queued)
		owners(t, c, 2, "a") // barge-in: a1 is still running on the backend
		wantTake(t, c, 0, Admitted, "b1")
		checkLedger(t, c)
		wantRelease(t, c, "a1", Cancelled) // the real cleanup, too late
		checkLedger(t, c)
		if s := c.Snapshot(t0); s.Leased != 1 || s.CleanupPending != 0 {
			t.Fatalf("%+v", s)
		}
	})
	if _, err := ParsePolicy("fifo"); err == nil {
		t.Error("unknown policy accepted")
	}
	for _, p := range []Policy{Frontdoor, Unbounded, Semaphore, ReleaseOnCancel} {
		if q, err := ParsePolicy(p.String()); err != nil || q != p {
			t.Errorf("round trip %v: %v %v", p, q, err)
		}
	}
}

// One tenant's burst takes at most its share of the queue; another tenant
// still gets in, and the share comes back as work leaves the queue.
func TestTenantShare(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute, TenantWaiting: 2})
	owners(t, c, 1, "a", "b", "c")
	offer := func(id, owner, tenant string, want Disposition) {
		t.Helper()
		got, err := c.Offer(Job{ID: id, Owner: owner, Generation: 1, Born: at(0), Tenant: tenant}, at(0))
		if err != nil || got != want {
			t.Fatalf("Offer(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	offer("a1", "a", "big", Queued)
	offer("a2", "a", "big", Queued)
	offer("a3", "a", "big", Overloaded) // share full, queue is not
	offer("b1", "b", "big", Overloaded) // the share is the tenant's, across owners
	offer("c1", "c", "small", Queued)
	wantTake(t, c, 0, Admitted, "a1") // leaves the queue: the share frees
	offer("a4", "a", "big", Queued)
	owners(t, c, 2, "a") // cancelled queued work frees its share too
	offer("b2", "b", "big", Queued)
	if s := c.Snapshot(t0); s.Ledger.Refused.OverShare != 2 || s.Ledger.Refused.Overloaded != 2 {
		t.Fatalf("ledger %+v", s.Ledger.Refused)
	}
	if len(c.tenants) != 2 {
		t.Fatalf("tenant counts %v", c.tenants)
	}
	checkLedger(t, c)
}
