package stagestest

import (
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Cases of the runtime slot limit and of Fair order, run by RunStore.

// limiter returns h's store as a admit.SlotLimiter: every store must move
// its limit at run time.
func (h harness) limiter() admit.SlotLimiter {
	h.t.Helper()
	l, ok := h.s.(admit.SlotLimiter)
	if !ok {
		h.t.Fatalf("%T is not a admit.SlotLimiter", h.s)
	}
	return l
}

func (h harness) setSlots(old, n, want int) {
	h.t.Helper()
	if got, err := h.limiter().SetSlots(h.ctx, old, n); err != nil || got != want {
		h.t.Fatalf("SetSlots(%d, %d) = %d, %v; want %d", old, n, got, err, want)
	}
	if s := h.snapshot(0); s.Limits.Slots != want {
		h.t.Fatalf("snapshot shows %d slots after SetSlots, want %d", s.Limits.Slots, want)
	}
}

// storeSetSlots: a lowered limit revokes no lease and grants none until
// releases bring the leases under it; a raised one grants at once; the
// compare and set leaves a limit someone else moved as it is.
func storeSetSlots(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 3, Waiting: 8, MaxAge: time.Minute})
	h.owners(1, "a")
	for i := range 6 {
		h.offer(job(fmt.Sprint("j", i), "a", 1, 0), 0, stages.Queued)
	}
	for i := range 3 {
		h.take(0, stages.Admitted, fmt.Sprint("j", i))
	}
	h.setSlots(3, 1, 1)
	h.state("j0", admit.Active) // nothing revoked
	h.take(0, admit.Busy, "")
	h.release("j0", stages.Completed)
	h.take(0, admit.Busy, "") // two leases, limit one
	h.release("j1", stages.Completed)
	h.take(0, admit.Busy, "")
	h.release("j2", stages.Completed)
	h.take(0, stages.Admitted, "j3")
	h.take(0, admit.Busy, "")
	h.setSlots(7, 5, 1) // stale: unchanged
	h.setSlots(0, 3, 3)
	h.take(0, stages.Admitted, "j4")
	h.take(0, stages.Admitted, "j5")
	if s := h.snapshot(0); s.Leased != 3 {
		t.Fatalf("leased %d, want 3", s.Leased)
	}
	if _, err := h.limiter().SetSlots(h.ctx, 0, 0); err == nil {
		t.Fatal("SetSlots(0) accepted")
	}
	h.ledger()
}

func fairLimits(slots int) stages.Limits {
	return stages.Limits{Slots: slots, Waiting: 16, MaxAge: 5 * time.Second, Order: stages.Fair}
}

// storeFairOrder: a freed slot goes to the tenants in turn, oldest first
// within each, work without a tenant being one tenant more; the work passed
// over that then expires is counted, and the ledger balances.
func storeFairOrder(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, fairLimits(1))
	h.owners(1, "b", "q1", "q2", "n")
	for i := range 5 {
		h.offer(tenantJob(fmt.Sprint("b", i), "b", "B", 0), 0, stages.Queued)
	}
	h.offer(tenantJob("q1", "q1", "Q1", 1), 1, stages.Queued)
	h.offer(tenantJob("n1", "n", "", 1), 1, stages.Queued)
	h.offer(tenantJob("q2", "q1", "Q1", 1), 1, stages.Queued)
	for _, id := range []string{"b0", "q1", "n1", "b1", "q2", "b2"} {
		h.take(1, stages.Admitted, id)
		h.release(id, stages.Completed)
	}
	s := h.snapshot(1)
	if s.Ledger.FairSkips != 3 || s.Limits.Order != stages.Fair {
		t.Fatalf("fair skips %d, order %v; want 3, fair", s.Ledger.FairSkips, s.Limits.Order)
	}
	h.take(6, stages.Expired, "b3") // passed over, then too old
	h.take(6, stages.Expired, "b4")
	h.take(6, admit.Empty, "")
	if l := h.snapshot(6).Ledger; l.Expired != 2 || l.ExpiredOvertaken != 2 {
		t.Fatalf("expired %d overtaken %d; want 2 and 2", l.Expired, l.ExpiredOvertaken)
	}
	h.ledger()
}

// storeFairUncontended: with one tenant waiting, Fair order is FIFO, across
// owners, and skips nothing.
func storeFairUncontended(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, fairLimits(2))
	h.owners(1, "a", "b")
	ids := []string{"a1", "b1", "a2", "b2"}
	for i, id := range ids {
		h.offer(tenantJob(id, id[:1], "T", float64(i)), float64(i), stages.Queued)
	}
	for _, id := range ids {
		h.take(4, stages.Admitted, id)
		h.release(id, stages.Completed)
	}
	if l := h.snapshot(4).Ledger; l.FairSkips != 0 {
		t.Fatalf("fair skips %d with one tenant", l.FairSkips)
	}
	h.ledger()
}

// storeFairOwnerOrder: an owner's work keeps its order even when it spans
// tenants, and an expired head still leaves first.
func storeFairOwnerOrder(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, fairLimits(1))
	h.owners(1, "a", "c", "o")
	h.offer(tenantJob("old", "o", "O", 0), 0, stages.Queued)
	h.offer(tenantJob("c1", "c", "X", 3), 3, stages.Queued)
	h.offer(tenantJob("a1", "a", "X", 3), 3, stages.Queued)
	h.offer(tenantJob("a2", "a", "Y", 3), 3, stages.Queued)
	h.take(6, stages.Expired, "old") // the head, too old, leaves first
	h.take(6, stages.Admitted, "c1")
	h.release("c1", stages.Completed)
	// Y's turn (X was just served), but a2's owner has a1 waiting before it.
	h.take(6, stages.Admitted, "a1")
	h.release("a1", stages.Completed)
	h.take(6, stages.Admitted, "a2")
	h.ledger()
}
