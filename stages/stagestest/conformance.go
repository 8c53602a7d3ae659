package stagestest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Epoch is the time origin of the conformance suite: at(s) is Epoch + s seconds.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return Epoch.Add(time.Duration(sec * float64(time.Second))) }

// NewStore returns a fresh, empty stage with the given limits for one test.
type NewStore func(t *testing.T, l stages.Limits) admit.Store

// RunStore runs the stages contract against stores made by newStore: the
// named fixtures, Forget, Cancel, the equality boundaries, invalid input,
// bounded tombstones, the per-tenant share of the queue, the ledger and a
// concurrent limit check. Every store implementation (claim.Local,
// redisstage.Store) must pass it unchanged.
func RunStore(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		f    func(t *testing.T, newStore NewStore)
	}{
		{"Overload", storeOverload},
		{"Expiry", storeExpiry},
		{"CancellationWithDelayedCleanup", storeCancellation},
		{"OrderingAfterDrain", storeOrdering},
		{"ClosedAdmission", storeClosed},
		{"Forget", storeForget},
		{"Cancel", storeCancel},
		{"ReleaseFailed", storeReleaseFailed},
		{"Boundaries", storeBoundaries},
		{"Deadline", storeDeadline},
		{"InvalidInput", storeInvalid},
		{"Tombstones", storeTombstones},
		{"TenantShare", storeTenantShare},
		{"TenantShareExits", storeTenantShareExits},
		{"SetSlots", storeSetSlots},
		{"FairOrder", storeFairOrder},
		{"FairUncontended", storeFairUncontended},
		{"FairOwnerOrder", storeFairOwnerOrder},
		{"Concurrent", storeConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newStore) })
	}
}

type harness struct {
	t   *testing.T
	ctx context.Context
	s   admit.Store
}

func newHarness(t *testing.T, newStore NewStore, l stages.Limits) harness {
	t.Helper()
	return harness{t: t, ctx: context.Background(), s: newStore(t, l)}
}

func job(id, owner string, gen uint64, born float64) stages.Job {
	return stages.Job{ID: id, Owner: owner, Generation: gen, Born: at(born)}
}

func (h harness) owners(gen uint64, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if err := h.s.Rotate(h.ctx, id, gen, at(0)); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h harness) offer(j stages.Job, now float64, want stages.Disposition) {
	h.t.Helper()
	got, err := h.s.Offer(h.ctx, j, at(now))
	if err != nil || got != want {
		h.t.Fatalf("Offer(%s) at %v = %v, %v; want %v", j.ID, now, got, err, want)
	}
}

func (h harness) take(now float64, want stages.Disposition, wantID string) {
	h.t.Helper()
	got, id, err := h.s.Take(h.ctx, at(now))
	if err != nil || got != want || id != wantID {
		h.t.Fatalf("Take at %v = %v %q, %v; want %v %q", now, got, id, err, want, wantID)
	}
}

func (h harness) release(id string, want stages.Disposition) {
	h.t.Helper()
	got, err := h.s.Release(h.ctx, id)
	if err != nil || got != want {
		h.t.Fatalf("Release(%s) = %v, %v; want %v", id, got, err, want)
	}
}

func (h harness) state(id string, want stages.Disposition) {
	h.t.Helper()
	got, ok, err := h.s.State(h.ctx, id)
	if err != nil || !ok || got != want {
		h.t.Fatalf("State(%s) = %v %v, %v; want %v", id, got, ok, err, want)
	}
}

func (h harness) snapshot(now float64) stages.Snapshot {
	h.t.Helper()
	s, err := h.s.Snapshot(h.ctx, at(now))
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h harness) ledger() {
	h.t.Helper()
	s := h.snapshot(0)
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		h.t.Fatal(err)
	}
}

func storeOverload(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 2, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a", "b", "c", "d", "e")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("b1", "b", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	h.take(0, stages.Admitted, "b1")
	h.offer(job("c1", "c", 1, 0), 0, stages.Queued)
	h.offer(job("d1", "d", 1, 0), 0, stages.Queued)
	h.offer(job("e1", "e", 1, 0), 0, stages.Overloaded)
	if _, ok, _ := h.s.State(h.ctx, "e1"); ok {
		t.Fatal("overloaded job was retained")
	}
	h.take(0, admit.Busy, "")
	h.release("a1", stages.Completed)
	h.take(1, stages.Admitted, "c1")
	h.take(1, admit.Busy, "")
	if s := h.snapshot(1); s.Queued != 1 || s.Leased != 2 || s.Ledger.Refused.Overloaded != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	h.ledger()
}

func storeExpiry(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 3, MaxAge: 2 * time.Second})
	h.owners(1, "a", "b")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("b1", "b", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	h.take(2, admit.Busy, "") // equal age is still eligible
	h.take(2.001, stages.Expired, "b1")
	h.take(3, admit.Empty, "")
	h.state("b1", stages.Expired)
	if _, err := h.s.Offer(h.ctx, job("b1", "b", 1, 3), at(3)); !errors.Is(err, admit.ErrDuplicate) {
		t.Fatalf("re-offer of expired identity: %v", err)
	}
	h.release("a1", stages.Completed)
	h.ledger()
}

func storeCancellation(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute})
	h.owners(1, "a", "b")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("a2", "a", 1, 0), 0, stages.Queued)
	h.offer(job("b1", "b", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	if err := h.s.Rotate(h.ctx, "a", 2, at(1)); err != nil {
		t.Fatal(err)
	}
	h.state("a2", stages.Cancelled)
	h.state("a1", stages.Cancelled)
	s := h.snapshot(4)
	if s.Queued != 1 || s.Leased != 1 || s.CleanupPending != 1 || s.OldestCleanup != 3*time.Second {
		t.Fatalf("snapshot %+v", s)
	}
	h.take(5, admit.Busy, "") // cleanup still pending: b1 must wait
	h.release("a1", stages.Cancelled)
	if s := h.snapshot(5); s.CleanupPending != 0 {
		t.Fatalf("cleanup pending after release: %d", s.CleanupPending)
	}
	h.take(6, stages.Admitted, "b1")
	h.release("b1", stages.Completed)
	if g, ok, err := h.s.Generation(h.ctx, "a"); err != nil || !ok || g != 2 {
		t.Fatalf("Generation(a) = %d %v %v", g, ok, err)
	}
	h.ledger()
}

func storeOrdering(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a")
	h.offer(job("a1", "a", 1, 5), 5, stages.Queued)
	h.take(5, stages.Admitted, "a1")
	h.release("a1", stages.Completed)
	h.take(6, admit.Empty, "")
	h.offer(job("late", "a", 1, 4), 6, stages.OutOfOrder)
	h.offer(job("tie", "a", 1, 5), 6, stages.Queued)
	h.owners(2, "a")
	h.offer(job("fresh", "a", 2, 1), 6, stages.Queued)
	h.offer(job("old-gen", "a", 1, 6), 6, stages.Stale)
	h.ledger()
}

func storeClosed(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("a2", "a", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	if err := h.s.Close(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.offer(job("a3", "a", 1, 0), 0, stages.Closed)
	h.release("a1", stages.Completed)
	h.take(1, stages.Admitted, "a2")
	h.take(1, stages.Closed, "")
	h.release("a2", stages.Completed)
	if !h.snapshot(1).Closed {
		t.Fatal("snapshot not closed")
	}
	if err := h.s.Reopen(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.offer(job("a4", "a", 1, 1), 1, stages.Queued)
	h.ledger()
}

func storeForget(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("a2", "a", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	if err := h.s.Forget(h.ctx, "a", at(0)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := h.s.Generation(h.ctx, "a"); ok {
		t.Fatal("generation survived Forget")
	}
	h.state("a2", stages.Cancelled)
	if s := h.snapshot(0); s.Leased != 1 || s.CleanupPending != 1 || s.Queued != 0 || s.Owners != 0 {
		t.Fatalf("snapshot after Forget: %+v", s)
	}
	h.offer(job("a3", "a", 1, 0), 0, stages.Stale)
	h.release("a1", stages.Cancelled)
	if err := h.s.Forget(h.ctx, "never-seen", at(0)); err != nil {
		t.Fatal(err)
	}
	h.ledger()
}

func storeCancel(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a", "b")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("b1", "b", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	for _, id := range []string{"b1", "a1"} {
		if d, err := h.s.Cancel(h.ctx, id, at(1)); err != nil || d != stages.Cancelled {
			t.Fatalf("Cancel(%s) = %v, %v", id, d, err)
		}
	}
	h.state("b1", stages.Cancelled)
	h.state("a1", stages.Cancelled)
	if s := h.snapshot(1); s.Queued != 0 || s.Leased != 1 || s.CleanupPending != 1 {
		t.Fatalf("snapshot after Cancel: %+v", s)
	}
	h.release("a1", stages.Cancelled)
	if d, err := h.s.Cancel(h.ctx, "a1", at(2)); err != nil || d != stages.Cancelled {
		t.Fatalf("Cancel of terminal work = %v, %v", d, err)
	}
	if _, err := h.s.Cancel(h.ctx, "nobody", at(2)); !errors.Is(err, admit.ErrJob) {
		t.Fatalf("Cancel of unknown identity: %v", err)
	}
	h.ledger()
}

// storeReleaseFailed: a lease released after its backend failed is
// counted failed, never completed, and the ledger still balances; work
// cancelled while active stays cancelled; queued work has no lease.
func storeReleaseFailed(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 2, Waiting: 2, MaxAge: time.Minute})
	h.owners(1, "a", "b", "c")
	h.offer(job("a1", "a", 1, 0), 0, stages.Queued)
	h.offer(job("b1", "b", 1, 0), 0, stages.Queued)
	h.take(0, stages.Admitted, "a1")
	h.take(0, stages.Admitted, "b1")
	h.offer(job("c1", "c", 1, 0), 0, stages.Queued)
	if d, err := h.s.ReleaseFailed(h.ctx, "c1"); !errors.Is(err, admit.ErrNoLease) {
		t.Fatalf("ReleaseFailed of queued work = %v, %v; want ErrNoLease", d, err)
	}
	if d, err := h.s.ReleaseFailed(h.ctx, "a1"); err != nil || d != stages.Failed {
		t.Fatalf("ReleaseFailed(a1) = %v, %v; want failed", d, err)
	}
	h.state("a1", stages.Failed)
	if _, err := h.s.Cancel(h.ctx, "b1", at(1)); err != nil {
		t.Fatal(err)
	}
	if d, err := h.s.ReleaseFailed(h.ctx, "b1"); err != nil || d != stages.Cancelled {
		t.Fatalf("ReleaseFailed of cancelled work = %v, %v; want cancelled", d, err)
	}
	if _, err := h.s.ReleaseFailed(h.ctx, "a1"); !errors.Is(err, admit.ErrNoLease) {
		t.Fatalf("second ReleaseFailed(a1): %v; want ErrNoLease", err)
	}
	h.take(1, stages.Admitted, "c1")
	h.release("c1", stages.Completed)
	l := h.snapshot(1).Ledger
	if l.Failed != 1 || l.Completed != 1 || l.ReleasedCancelled != 1 || l.Admitted != 3 {
		t.Fatalf("ledger %+v: want failed 1, completed 1, released cancelled 1 of 3 admitted", l)
	}
	h.ledger()
}

func storeBoundaries(t *testing.T, ns NewStore) {
	tests := []struct {
		name      string
		maxAge    time.Duration
		born, now float64
		want      stages.Disposition
	}{
		{"age equal to max is eligible", 2 * time.Second, 0, 2, stages.Queued},
		{"age one nanosecond over max expires", 2 * time.Second, 0, 2.000000001, stages.Expired},
		{"zero max age admits only age zero", 0, 1, 1, stages.Queued},
		{"zero max age expires any age", 0, 1, 1.000000001, stages.Expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: tt.maxAge})
			h.owners(1, "a")
			h.offer(job("x", "a", 1, tt.born), tt.now, tt.want)
		})
	}
	t.Run("take at the boundary", func(t *testing.T) {
		h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
		h.owners(1, "a")
		h.offer(job("x", "a", 1, 0), 0, stages.Queued)
		h.take(1, stages.Admitted, "x")
	})
	t.Run("take before born is an error", func(t *testing.T) {
		h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
		h.owners(1, "a")
		h.offer(job("x", "a", 1, 5), 5, stages.Queued)
		if _, _, err := h.s.Take(h.ctx, at(4)); !errors.Is(err, admit.ErrClock) {
			t.Fatalf("Take before born: %v", err)
		}
	})
	t.Run("large generations", func(t *testing.T) {
		h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
		const g = 1<<63 + 12345 // beyond a double's exact integers
		h.owners(g, "a")
		if err := h.s.Rotate(h.ctx, "a", g-1, at(0)); !errors.Is(err, stages.ErrGeneration) {
			t.Fatalf("Rotate backwards by one: %v", err)
		}
		h.offer(job("x", "a", g+1, 0), 0, stages.Stale)
		h.offer(job("y", "a", g, 0), 0, stages.Queued)
		if got, ok, err := h.s.Generation(h.ctx, "a"); err != nil || !ok || got != g {
			t.Fatalf("Generation = %d %v %v", got, ok, err)
		}
	})
}

func storeInvalid(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
	h.owners(1, "a")
	bad := []stages.Job{
		{ID: "", Owner: "a", Generation: 1, Born: at(0)},
		{ID: "x", Owner: "", Generation: 1, Born: at(0)},
		{ID: "x", Owner: "a", Generation: 1},
		{ID: "x", Owner: "a", Generation: 1, Born: at(1)},
	}
	for _, j := range bad {
		if d, err := h.s.Offer(h.ctx, j, at(0)); !errors.Is(err, admit.ErrJob) {
			t.Errorf("Offer(%+v) = %v, %v; want ErrJob", j, d, err)
		}
	}
	if err := h.s.Rotate(h.ctx, "", 1, at(0)); !errors.Is(err, stages.ErrGeneration) {
		t.Errorf("Rotate with empty owner: %v", err)
	}
	if err := h.s.Rotate(h.ctx, "a", 1, at(0)); !errors.Is(err, stages.ErrGeneration) {
		t.Errorf("Rotate to the same generation: %v", err)
	}
	if _, err := h.s.Release(h.ctx, "nobody"); !errors.Is(err, admit.ErrNoLease) {
		t.Errorf("Release unknown: %v", err)
	}
	h.offer(job("q", "a", 1, 0), 0, stages.Queued)
	if _, err := h.s.Release(h.ctx, "q"); !errors.Is(err, admit.ErrNoLease) {
		t.Errorf("Release of queued work: %v", err)
	}
	h.take(0, stages.Admitted, "q")
	h.release("q", stages.Completed)
	if _, err := h.s.Release(h.ctx, "q"); !errors.Is(err, admit.ErrNoLease) {
		t.Errorf("second Release: %v", err)
	}
	if s := h.snapshot(0); s.Ledger.Offered != 1 {
		t.Errorf("invalid offers were counted: %+v", s.Ledger)
	}
}

func storeTombstones(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Minute, Tombstones: 3})
	h.owners(1, "a")
	for i := range 6 {
		id := fmt.Sprint("t", i)
		h.offer(job(id, "a", 1, 0), 0, stages.Queued)
		h.take(0, stages.Admitted, id)
		h.release(id, stages.Completed)
	}
	if s := h.snapshot(0); s.Tombstones != 3 {
		t.Fatalf("tombstones %d, want 3", s.Tombstones)
	}
	if _, ok, _ := h.s.State(h.ctx, "t0"); ok {
		t.Fatal("oldest tombstone was not evicted")
	}
	h.state("t5", stages.Completed)
	h.ledger()
}

// storeConcurrent runs many goroutines through offer, take and release and
// checks that the leases held at once never exceed the slots.
func storeConcurrent(t *testing.T, ns NewStore) {
	const slots, workers, rounds = 3, 12, 15
	h := newHarness(t, ns, stages.Limits{Slots: slots, Waiting: 4, MaxAge: time.Hour})
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		owner := fmt.Sprint("w", w)
		h.owners(1, owner)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- concurrentWorker(h, owner, rounds, &held, &peak)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p > slots {
		t.Fatalf("peak leases %d > slots %d", p, slots)
	}
	s := h.snapshot(0)
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		t.Fatal(err)
	}
}

func concurrentWorker(h harness, owner string, rounds int, held, peak *atomic.Int64) error {
	for r := range rounds {
		id := fmt.Sprint(owner, "-", r)
		d, err := h.s.Offer(h.ctx, job(id, owner, 1, 0), at(0))
		if err != nil {
			return err
		}
		if d != stages.Queued {
			continue
		}
		for {
			d, got, err := h.s.Take(h.ctx, at(0))
			if err != nil {
				return err
			}
			if d != stages.Admitted {
				if st, _, _ := h.s.State(h.ctx, id); st != stages.Queued {
					break // someone else took it for us
				}
				time.Sleep(time.Millisecond)
				continue
			}
			n := held.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			held.Add(-1)
			if _, err := h.s.Release(h.ctx, got); err != nil {
				return err
			}
			if got == id {
				break
			}
		}
	}
	return nil
}

// storeDeadline: a job's own Deadline replaces Born + MaxAge, later or
// earlier, at offer and at take, equal still eligible.
func storeDeadline(t *testing.T, ns NewStore) {
	withDeadline := func(id string, born, deadline float64) stages.Job {
		j := job(id, "a", 1, born)
		j.Deadline = at(deadline)
		return j
	}
	tests := []struct {
		name      string
		job       stages.Job
		offerAt   float64
		offerWant stages.Disposition
		takeAt    float64
		takeWant  stages.Disposition
	}{
		{"later than max age, taken at it", withDeadline("x", 0, 5), 3, stages.Queued, 5, stages.Admitted},
		{"later than max age, taken past it", withDeadline("x", 0, 5), 3, stages.Queued, 5.000000001, stages.Expired},
		{"earlier than max age, offered past it", withDeadline("x", 0, 0.5), 0.6, stages.Expired, 0, 0},
		{"earlier than max age, taken past it", withDeadline("x", 0, 0.5), 0.1, stages.Queued, 0.7, stages.Expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second})
			h.owners(1, "a")
			h.offer(tt.job, tt.offerAt, tt.offerWant)
			if tt.offerWant == stages.Queued {
				h.take(tt.takeAt, tt.takeWant, "x")
			}
		})
	}
}
