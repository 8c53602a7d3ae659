package stagestest

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// NewGate returns a fresh gate with the given limits whose time is clock.
type NewGate func(t *testing.T, l stages.Limits, clock *Clock) stages.Gate

// RunGate runs the dispatcher contract against gates made by newGate:
// release wakes waiting work at once, expiry is reported at the head's
// deadline while every slot is busy, a rotation resolves queued tickets
// before it returns, refused work gets no ticket, and the tenant's share of
// the queue reaches the store.
func RunGate(t *testing.T, newGate NewGate) {
	tests := []struct {
		name string
		f    func(t *testing.T, newGate NewGate)
	}{
		{"AdmitsOnRelease", gateAdmitsOnRelease},
		{"AdmitsOnReleaseFailed", gateAdmitsOnReleaseFailed},
		{"ExpiresAtDeadlineWhileBusy", gateExpires},
		{"ExpiresAtJobDeadline", gateJobDeadline},
		{"RotateCancelsQueued", gateRotate},
		{"Refusals", gateRefusals},
		{"TenantShare", gateTenantShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newGate) })
	}
}

type gateHarness struct {
	t     *testing.T
	ctx   context.Context
	g     stages.Gate
	clock *Clock
}

func newGateHarness(t *testing.T, newGate NewGate, l stages.Limits, owners ...string) gateHarness {
	t.Helper()
	clock := NewClock(Epoch)
	g := newGate(t, l, clock)
	t.Cleanup(g.Stop)
	h := gateHarness{t: t, ctx: context.Background(), g: g, clock: clock}
	for _, o := range owners {
		if err := g.Rotate(h.ctx, o, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Ready(h.ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return h
}

func (h gateHarness) submit(id, owner string, gen uint64, born time.Time) stages.Pending {
	h.t.Helper()
	p, disp, err := h.g.Submit(h.ctx, stages.Job{ID: id, Owner: owner, Generation: gen, Born: born})
	if err != nil || disp != stages.Queued || p == nil {
		h.t.Fatalf("Submit(%s) = %v, %v, %v", id, p, disp, err)
	}
	return p
}

func resolved(t *testing.T, p stages.Pending, want stages.Disposition, wantAt time.Time) {
	t.Helper()
	select {
	case <-p.Done():
	default:
		t.Fatalf("unresolved, want %v", want)
	}
	if got, at := p.Result(); got != want || !at.Equal(wantAt) {
		t.Fatalf("resolved %v at %v, want %v at %v", got, at, want, wantAt)
	}
}

func pending(t *testing.T, p stages.Pending) {
	t.Helper()
	select {
	case <-p.Done():
		r, _ := p.Result()
		t.Fatalf("resolved as %v, want pending", r)
	default:
	}
}

func gateAdmitsOnRelease(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second}, "a", "b")
	a := h.submit("a1", "a", 1, Epoch)
	resolved(t, a, stages.Admitted, Epoch)
	b := h.submit("b1", "b", 1, Epoch)
	h.clock.Advance(500 * time.Millisecond)
	pending(t, b)
	if d, err := h.g.Release(h.ctx, "a1"); err != nil || d != stages.Completed {
		t.Fatalf("Release = %v, %v", d, err)
	}
	resolved(t, b, stages.Admitted, Epoch.Add(500*time.Millisecond))
	if s, err := h.g.Snapshot(h.ctx); err != nil || s.Leased != 1 || s.Queued != 0 {
		t.Fatalf("Snapshot = %+v, %v", s, err)
	}
	if _, err := h.g.Release(h.ctx, "b1"); err != nil {
		t.Fatal(err)
	}
}

// gateAdmitsOnReleaseFailed: a lease released after its backend failed
// frees its slot as a completed one does, and is counted failed.
func gateAdmitsOnReleaseFailed(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second}, "a", "b")
	a := h.submit("a1", "a", 1, Epoch)
	resolved(t, a, stages.Admitted, Epoch)
	b := h.submit("b1", "b", 1, Epoch)
	h.clock.Advance(100 * time.Millisecond)
	if d, err := h.g.ReleaseFailed(h.ctx, "a1"); err != nil || d != stages.Failed {
		t.Fatalf("ReleaseFailed = %v, %v", d, err)
	}
	resolved(t, b, stages.Admitted, Epoch.Add(100*time.Millisecond))
	if _, err := h.g.Release(h.ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	s, err := h.g.Snapshot(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Ledger; l.Failed != 1 || l.Completed != 1 {
		t.Fatalf("ledger %+v: want one failed, one completed", l)
	}
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		t.Fatal(err)
	}
}

func gateExpires(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Second}, "a", "b")
	h.submit("a1", "a", 1, Epoch)
	b := h.submit("b1", "b", 1, Epoch.Add(-200*time.Millisecond))
	h.clock.Advance(800 * time.Millisecond)
	pending(t, b)
	h.clock.Advance(time.Millisecond)
	resolved(t, b, stages.Expired, Epoch.Add(800*time.Millisecond+time.Nanosecond))
	if _, err := h.g.Release(h.ctx, "a1"); err != nil {
		t.Fatal(err)
	}
}

// gateJobDeadline: a queued job with its own Deadline, later than Born +
// MaxAge, waits past MaxAge and is resolved expired just after the
// Deadline, by the gate's own clock.
func gateJobDeadline(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Second}, "a", "b")
	h.submit("a1", "a", 1, Epoch)
	p, disp, err := h.g.Submit(h.ctx, stages.Job{ID: "b1", Owner: "b", Generation: 1, Born: Epoch, Deadline: Epoch.Add(3 * time.Second)})
	if err != nil || disp != stages.Queued {
		t.Fatalf("Submit with a deadline = %v, %v", disp, err)
	}
	h.clock.Advance(3 * time.Second)
	pending(t, p)
	h.clock.Advance(time.Millisecond)
	resolved(t, p, stages.Expired, Epoch.Add(3*time.Second+time.Nanosecond))
	if _, err := h.g.Release(h.ctx, "a1"); err != nil {
		t.Fatal(err)
	}
}

func gateRotate(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute}, "a", "b")
	h.submit("a1", "a", 1, Epoch)
	a2 := h.submit("a2", "a", 1, Epoch)
	b1 := h.submit("b1", "b", 1, Epoch)
	if err := h.g.Rotate(h.ctx, "a", 2); err != nil {
		t.Fatal(err)
	}
	resolved(t, a2, stages.Cancelled, Epoch)
	pending(t, b1) // the cancelled lease still holds the slot
	if d, err := h.g.Release(h.ctx, "a1"); err != nil || d != stages.Cancelled {
		t.Fatalf("Release of cancelled work = %v, %v", d, err)
	}
	resolved(t, b1, stages.Admitted, Epoch)
	if _, err := h.g.Release(h.ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	if err := h.g.Forget(h.ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

func gateRefusals(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Minute}, "a")
	h.submit("a1", "a", 1, Epoch)
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
			t.Fatalf("Submit(%s) = %v, %v, %v; want %v and no ticket", tt.job.ID, p, d, err, tt.want)
		}
	}
	if d, err := h.g.Cancel(h.ctx, "a2"); err != nil || d != stages.Cancelled {
		t.Fatalf("Cancel = %v, %v", d, err)
	}
	if _, err := h.g.Release(h.ctx, "a1"); err != nil {
		t.Fatal(err)
	}
}
