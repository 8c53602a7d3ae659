package admit

import (
	"errors"
	"testing"
	"time"
)

// t0 anchors the synthetic clock of the fixtures: seconds after t0 stand for
// the reference's synthetic seconds.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func job(id, owner string, gen uint64, born float64) Job {
	return Job{ID: id, Owner: owner, Generation: gen, Born: at(born)}
}

func mustNew(t testing.TB, l Limits) *Controller {
	t.Helper()
	c, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantOffer(t *testing.T, c *Controller, j Job, now float64, want Disposition) {
	t.Helper()
	got, err := c.Offer(j, at(now))
	if err != nil || got != want {
		t.Fatalf("Offer(%s) = %v, %v; want %v", j.ID, got, err, want)
	}
}

func wantTake(t *testing.T, c *Controller, now float64, want Disposition, wantID string) {
	t.Helper()
	got, id, err := c.Take(at(now))
	if err != nil || got != want || id != wantID {
		t.Fatalf("Take(%v) = %v, %q, %v; want %v, %q", now, got, id, err, want, wantID)
	}
}

func wantRelease(t *testing.T, c *Controller, id string, want Disposition) {
	t.Helper()
	got, err := c.Release(id)
	if err != nil || got != want {
		t.Fatalf("Release(%s) = %v, %v; want %v", id, got, err, want)
	}
}

func checkLedger(t *testing.T, c *Controller) {
	t.Helper()
	s := c.Snapshot(t0)
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		t.Fatal(err)
	}
}

// TestReference ports the reference fixture step for step.
func TestReference(t *testing.T) {
	c := mustNew(t, Limits{Slots: 1, Waiting: 2, MaxAge: 2 * time.Second})
	for _, o := range []string{"caller-a", "caller-b"} {
		if err := c.Rotate(o, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	j1 := job("one", "caller-a", 1, 0)
	wantOffer(t, c, j1, 0, Queued)
	if _, err := c.Offer(j1, at(0)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second offer of one: %v, want ErrDuplicate", err)
	}
	wantOffer(t, c, job("two", "caller-b", 1, 0), 0, Queued)
	wantOffer(t, c, job("full", "caller-a", 1, 0), 0, Overloaded)
	wantTake(t, c, 0, Admitted, "one")
	wantTake(t, c, 0, Busy, "")
	if err := c.Rotate("caller-a", 2, t0); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.State("one"); s != Cancelled {
		t.Fatalf("State(one) = %v, want cancelled", s)
	}
	if c.Snapshot(t0).Leased != 1 {
		t.Fatal("cancelled active work lost its lease before release")
	}
	wantTake(t, c, 0, Busy, "")
	wantRelease(t, c, "one", Cancelled)
	wantTake(t, c, 2, Admitted, "two")
	wantRelease(t, c, "two", Completed)
	wantTake(t, c, 2, Empty, "")
	wantOffer(t, c, job("older", "caller-b", 1, -1), 0, OutOfOrder)
	wantOffer(t, c, job("equal", "caller-b", 1, 0), 0, Queued)
	wantTake(t, c, 3, Expired, "equal")
	wantTake(t, c, 3, Empty, "")
	wantOffer(t, c, job("old", "caller-b", 1, 0), 99, Expired)
	wantOffer(t, c, job("stale", "caller-a", 1, 0), 99, Stale)
	if g, ok := c.Generation("caller-a"); !ok || g != 2 {
		t.Fatalf("Generation(caller-a) = %d, %v", g, ok)
	}
	wantOffer(t, c, job("new", "caller-a", 2, -1), 0, Queued)
	if err := c.Rotate("caller-a", 3, t0); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.State("new"); s != Cancelled || c.Snapshot(t0).Queued != 0 {
		t.Fatalf("State(new) = %v, queued %d", s, c.Snapshot(t0).Queued)
	}
	c.Close()
	wantOffer(t, c, job("closed", "caller-a", 3, 0), 0, Closed)
	wantTake(t, c, 0, Closed, "")
	if _, err := c.Release("one"); !errors.Is(err, ErrNoLease) {
		t.Fatalf("second release: %v", err)
	}
	if err := c.Rotate("caller-a", 3, t0); !errors.Is(err, ErrGeneration) {
		t.Fatalf("rotate to same generation: %v", err)
	}
	if _, err := c.Offer(job("future", "caller-a", 3, 1), at(0)); !errors.Is(err, ErrJob) {
		t.Fatalf("future job: %v", err)
	}
	for _, l := range []Limits{{Slots: 0, Waiting: 1, MaxAge: 1}, {Slots: 1, Waiting: 0, MaxAge: 1}, {Slots: 1, Waiting: 1, MaxAge: -1}, {Slots: 1, Waiting: 1, Tombstones: -1}} {
		if _, err := New(l); !errors.Is(err, ErrLimits) {
			t.Errorf("New(%+v) = %v, want ErrLimits", l, err)
		}
	}
	checkLedger(t, c)
}
