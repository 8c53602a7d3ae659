package stagestest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// NewClaimGate returns a fresh claim gate with the given limits whose time
// is clock.
type NewClaimGate func(t *testing.T, l stages.Limits, clock *Clock) claim.Gate

// RunClaimGate runs the contract of a gate whose take is a claim (the
// fallback's callback and handoff queues): work waits, with every slot
// free, until a claim admits the head; a claim for work behind the head is
// refused as Queued; a release frees a slot and admits nothing; unclaimed
// work expires at its deadline; rotation, cancellation, refusals, the
// tenant's share and the ledger are the Gate's. Every claim gate
// (admit.LocalClaimGate, redisstage.Dispatcher with Claim set) must pass it
// unchanged; a queue whose owners cannot withdraw its work passes it with
// Kept, and no other option exists.
func RunClaimGate(t *testing.T, newGate NewClaimGate, opts ...ClaimOption) {
	var o claimOptions
	for _, opt := range opts {
		opt(&o)
	}
	rotate := struct {
		name string
		f    func(t *testing.T, newGate NewClaimGate, o claimOptions)
	}{"RotateCancelsQueued", claimRotate}
	if o.kept {
		rotate.name, rotate.f = "RotateKeepsQueued", claimRotateKept
	}
	tests := []struct {
		name string
		f    func(t *testing.T, newGate NewClaimGate, o claimOptions)
	}{
		{"AdmitsOnlyOnClaim", claimAdmitsOnClaim},
		{"ClaimWant", claimWant},
		{"ReleaseFailed", claimReleaseFailed},
		{"ExpiresUnclaimed", claimExpires},
		rotate,
		{"Refusals", claimRefusals},
		{"TenantShare", claimTenantShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newGate, o) })
	}
}

// ClaimOption declares how a claim gate's contract differs from the
// Gate's, narrowly and on purpose.
type ClaimOption func(*claimOptions)

type claimOptions struct{ kept bool }

// Kept declares a queue that keeps its work until a claim or its deadline:
// its owner cannot withdraw it. A booked callback is such work: the caller
// was told it will be called back, and the booking outlives the call (its
// later generations) and the process that took it. Cancel then fails with
// an error wrapping errors.ErrUnsupported and changes nothing, and Rotate
// leaves the owner's waiting work where it waits (RotateKeepsQueued in
// place of RotateCancelsQueued); ClaimWant and Refusals check that in
// place of a withdrawal. Every other check is unchanged.
func Kept() ClaimOption { return func(o *claimOptions) { o.kept = true } }

// cancelRefused checks that a kept queue refuses to cancel id.
func (h claimHarness) cancelRefused(id string) {
	h.t.Helper()
	if d, err := h.g.Cancel(h.ctx, id); !errors.Is(err, errors.ErrUnsupported) {
		h.t.Fatalf("Cancel(%s) of kept work = %v, %v; want errors.ErrUnsupported", id, d, err)
	}
}

type claimHarness struct {
	gateHarness
	g claim.Gate
}

func newClaimHarness(t *testing.T, ng NewClaimGate, l stages.Limits, owners ...string) claimHarness {
	t.Helper()
	var cg claim.Gate
	h := newGateHarness(t, func(t *testing.T, l stages.Limits, clock *Clock) stages.Gate {
		cg = ng(t, l, clock)
		return cg
	}, l, owners...)
	return claimHarness{gateHarness: h, g: cg}
}

func (h claimHarness) claim(want string, wantDisp stages.Disposition, wantID string) {
	h.t.Helper()
	d, id, err := h.g.Claim(h.ctx, want)
	if err != nil || d != wantDisp || id != wantID {
		h.t.Fatalf("Claim(%q) = %v %q, %v; want %v %q", want, d, id, err, wantDisp, wantID)
	}
}

func (h claimHarness) release(id string, want stages.Disposition) {
	h.t.Helper()
	if d, err := h.g.Release(h.ctx, id); err != nil || d != want {
		h.t.Fatalf("Release(%s) = %v, %v; want %v", id, d, err, want)
	}
}

// balanced checks the inventory and that the ledger balances.
func (h claimHarness) balanced(queued, leased int) stages.Snapshot {
	h.t.Helper()
	s, err := h.g.Snapshot(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if s.Queued != queued || s.Leased != leased {
		h.t.Fatalf("Snapshot: queued %d leased %d, want %d and %d", s.Queued, s.Leased, queued, leased)
	}
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// claimAdmitsOnClaim: with every slot free, work waits for a claim; the
// claim admits the head and resolves its Pending; a release frees the
// slot but admits nobody.
func claimAdmitsOnClaim(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute}, "a", "b")
	a := h.submit("a1", "a", 1, Epoch)
	b := h.submit("b1", "b", 1, Epoch)
	h.clock.Advance(time.Second)
	pending(t, a) // a free slot admits nothing
	h.balanced(2, 0)
	h.claim("", stages.Admitted, "a1")
	resolved(t, a, stages.Admitted, Epoch.Add(time.Second))
	h.claim("", claim.Busy, "")
	h.clock.Advance(time.Second)
	h.release("a1", stages.Completed)
	pending(t, b) // a release admits nothing either
	h.balanced(1, 0)
	h.claim("", stages.Admitted, "b1")
	resolved(t, b, stages.Admitted, Epoch.Add(2*time.Second))
	h.claim("", claim.Empty, "") // nothing waits: Empty, though the slot is b1's
	h.release("b1", stages.Completed)
	h.claim("", claim.Empty, "")
	if s := h.balanced(0, 0); s.Ledger.Admitted != 2 || s.Ledger.Completed != 2 {
		t.Fatalf("ledger %+v: want 2 admitted, 2 completed", s.Ledger)
	}
}

// claimWant: a claim naming work admits it only at the head; work behind
// the head is Queued, work that left the queue reports its state (kept
// work cannot be cancelled: it still waits).
func claimWant(t *testing.T, ng NewClaimGate, o claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 2, Waiting: 3, MaxAge: time.Minute}, "a", "b", "c")
	h.submit("a1", "a", 1, Epoch)
	b := h.submit("b1", "b", 1, Epoch)
	h.submit("c1", "c", 1, Epoch)
	h.claim("b1", stages.Queued, "")
	pending(t, b)
	h.claim("a1", stages.Admitted, "a1")
	if o.kept {
		h.cancelRefused("c1")
		h.claim("c1", stages.Queued, "") // behind b1 still
	} else {
		if d, err := h.g.Cancel(h.ctx, "c1"); err != nil || d != stages.Cancelled {
			t.Fatalf("Cancel(c1) = %v, %v", d, err)
		}
		h.claim("c1", stages.Cancelled, "")
	}
	h.claim("nobody", 0, "")
	h.claim("b1", stages.Admitted, "b1")
	resolved(t, b, stages.Admitted, Epoch)
	h.claim("a1", claim.Active, "") // claimed already
	h.release("a1", stages.Completed)
	h.release("b1", stages.Completed)
	if o.kept {
		h.claim("c1", stages.Admitted, "c1")
		h.release("c1", stages.Completed)
	}
	h.balanced(0, 0)
}

// claimReleaseFailed: a claim given up as failed frees its slot and is
// counted Failed.
func claimReleaseFailed(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Minute}, "a")
	h.submit("a1", "a", 1, Epoch)
	h.claim("", stages.Admitted, "a1")
	if d, err := h.g.ReleaseFailed(h.ctx, "a1"); err != nil || d != stages.Failed {
		t.Fatalf("ReleaseFailed = %v, %v", d, err)
	}
	if s := h.balanced(0, 0); s.Ledger.Failed != 1 {
		t.Fatalf("ledger %+v: want one failed", s.Ledger)
	}
}

// claimExpires: unclaimed work expires just past its deadline, by the
// gate's own timer, though every slot is free, the head first and the next
// at its own deadline.
func claimExpires(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 2, Waiting: 3, MaxAge: time.Second}, "a", "b")
	a := h.submit("a1", "a", 1, Epoch.Add(-200*time.Millisecond))
	b := h.submit("b1", "b", 1, Epoch)
	h.clock.Advance(800 * time.Millisecond)
	pending(t, a)
	h.clock.Advance(time.Millisecond)
	resolved(t, a, stages.Expired, Epoch.Add(800*time.Millisecond+time.Nanosecond))
	pending(t, b)
	h.clock.Advance(200 * time.Millisecond)
	resolved(t, b, stages.Expired, Epoch.Add(time.Second+time.Nanosecond))
	h.claim("", claim.Empty, "")
	if s := h.balanced(0, 0); s.Ledger.Expired != 2 || s.Ledger.Admitted != 0 {
		t.Fatalf("ledger %+v: want 2 expired, none admitted", s.Ledger)
	}
}

// rotated is the start of the rotation cases: a1 claimed, a2 and b1
// waiting, and owner a moved to generation 2.
func rotated(t *testing.T, ng NewClaimGate) (h claimHarness, a2, b1 stages.Pending) {
	h = newClaimHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute}, "a", "b")
	h.submit("a1", "a", 1, Epoch)
	a2 = h.submit("a2", "a", 1, Epoch)
	b1 = h.submit("b1", "b", 1, Epoch)
	h.claim("", stages.Admitted, "a1")
	if err := h.g.Rotate(h.ctx, "a", 2); err != nil {
		t.Fatal(err)
	}
	return h, a2, b1
}

// claimRotate: a new generation cancels the owner's waiting work before
// Rotate returns; its claimed work keeps the slot until released.
func claimRotate(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h, a2, b1 := rotated(t, ng)
	resolved(t, a2, stages.Cancelled, Epoch)
	h.claim("", claim.Busy, "") // the cancelled claim still holds the slot
	h.release("a1", stages.Cancelled)
	pending(t, b1)
	h.claim("b1", stages.Admitted, "b1")
	h.release("b1", stages.Completed)
	if err := h.g.Forget(h.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	h.balanced(0, 0)
}

// claimRotateKept: a new generation leaves the owner's waiting work where
// it waits, and its claimed work completes as claimed; work of the old
// generation is refused as Stale all the same.
func claimRotateKept(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h, a2, b1 := rotated(t, ng)
	pending(t, a2)
	if _, d, err := h.g.Submit(h.ctx, stages.Job{ID: "a3", Owner: "a", Generation: 1, Born: Epoch}); err != nil || d != stages.Stale {
		t.Fatalf("Submit of the old generation = %v, %v; want Stale", d, err)
	}
	h.release("a1", stages.Completed)
	h.claim("b1", stages.Queued, "") // a2 still heads the queue
	h.claim("", stages.Admitted, "a2")
	resolved(t, a2, stages.Admitted, Epoch)
	h.release("a2", stages.Completed)
	h.claim("b1", stages.Admitted, "b1")
	resolved(t, b1, stages.Admitted, Epoch)
	h.release("b1", stages.Completed)
	if err := h.g.Forget(h.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if s := h.balanced(0, 0); s.Ledger.Completed != 3 || s.Ledger.Refused.Stale != 1 {
		t.Fatalf("ledger %+v: want 3 completed, one stale", s.Ledger)
	}
}

// claimRefusals: a stale generation and a full queue are refused without a
// Pending; cancelling waiting work frees its place (kept work holds it
// until claimed).
func claimRefusals(t *testing.T, ng NewClaimGate, o claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Minute}, "a")
	h.submit("a1", "a", 1, Epoch)
	h.claim("", stages.Admitted, "a1")
	h.submit("a2", "a", 1, Epoch)
	for _, tt := range []struct {
		job  stages.Job
		want stages.Disposition
	}{
		{stages.Job{ID: "s", Owner: "a", Generation: 7, Born: Epoch}, stages.Stale},
		{stages.Job{ID: "o", Owner: "a", Generation: 1, Born: Epoch}, stages.Overloaded},
	} {
		p, d, err := h.g.Submit(h.ctx, tt.job)
		if err != nil || d != tt.want || p != nil {
			t.Fatalf("Submit(%s) = %v, %v, %v; want %v and no Pending", tt.job.ID, p, d, err, tt.want)
		}
	}
	overloaded := uint64(1)
	if o.kept {
		h.cancelRefused("a2")
		if p, d, err := h.g.Submit(h.ctx, stages.Job{ID: "a3", Owner: "a", Generation: 1, Born: Epoch}); err != nil || d != stages.Overloaded || p != nil {
			t.Fatalf("Submit(a3) = %v, %v, %v; want Overloaded: a2 keeps its place", p, d, err)
		}
		overloaded++
		h.release("a1", stages.Completed)
		h.claim("", stages.Admitted, "a2")
		h.release("a2", stages.Completed)
	} else {
		if d, err := h.g.Cancel(h.ctx, "a2"); err != nil || d != stages.Cancelled {
			t.Fatalf("Cancel = %v, %v", d, err)
		}
		h.submit("a3", "a", 1, Epoch) // its place is free again
		h.release("a1", stages.Completed)
		h.claim("", stages.Admitted, "a3")
		h.release("a3", stages.Completed)
	}
	if s := h.balanced(0, 0); s.Ledger.Refused.Overloaded != overloaded || s.Ledger.Refused.Stale != 1 {
		t.Fatalf("refusals %+v", s.Ledger.Refused)
	}
}

// claimTenantShare: one tenant cannot take every waiting place, and a
// claim gives its place back.
func claimTenantShare(t *testing.T, ng NewClaimGate, _ claimOptions) {
	h := newClaimHarness(t, ng, stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute, TenantWaiting: 1}, "a", "b", "c")
	submit := func(id, owner, tenant string) stages.Disposition {
		t.Helper()
		_, d, err := h.g.Submit(context.Background(), stages.Job{ID: id, Owner: owner, Generation: 1, Born: Epoch, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := submit("a1", "a", "big"); d != stages.Queued {
		t.Fatalf("first of tenant = %v", d)
	}
	if d := submit("b1", "b", "big"); d != stages.Overloaded {
		t.Fatalf("over the tenant's share = %v, want Overloaded", d)
	}
	if d := submit("c1", "c", "small"); d != stages.Queued {
		t.Fatalf("another tenant = %v", d)
	}
	h.claim("", stages.Admitted, "a1")
	if d := submit("b2", "b", "big"); d != stages.Queued {
		t.Fatalf("after the claim = %v, want Queued", d)
	}
	h.release("a1", stages.Completed)
	for _, id := range []string{"c1", "b2"} {
		h.claim("", stages.Admitted, id)
		h.release(id, stages.Completed)
	}
	if s := h.balanced(0, 0); s.Ledger.Refused.OverShare != 1 {
		t.Fatalf("refusals %+v: want one over share", s.Ledger.Refused)
	}
}
