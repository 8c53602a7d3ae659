package stagestest

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

func tenantJob(id, owner, tenant string, born float64) stages.Job {
	j := job(id, owner, 1, born)
	j.Tenant = tenant
	return j
}

// storeTenantShare checks Limits.TenantWaiting: one tenant's queued work is
// capped at its share across its owners, over the share an offer is
// Overloaded and counted as OverShare, other tenants and work without a
// tenant still queue.
func storeTenantShare(t *testing.T, ns NewStore) {
	h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 6, MaxAge: time.Minute, TenantWaiting: 2})
	h.owners(1, "a", "b", "c", "d")
	h.offer(tenantJob("a1", "a", "big", 0), 0, stages.Queued)
	h.offer(tenantJob("a2", "a", "big", 0), 0, stages.Queued)
	h.offer(tenantJob("a3", "a", "big", 0), 0, stages.Overloaded) // share full, queue is not
	h.offer(tenantJob("b1", "b", "big", 0), 0, stages.Overloaded) // the share is the tenant's, across owners
	if _, ok, _ := h.s.State(h.ctx, "a3"); ok {
		t.Fatal("work over its tenant's share was retained")
	}
	h.offer(tenantJob("c1", "c", "small", 0), 0, stages.Queued)
	h.offer(tenantJob("d1", "d", "", 0), 0, stages.Queued) // no tenant: no share
	h.offer(tenantJob("d2", "d", "", 0), 0, stages.Queued)
	h.offer(tenantJob("d3", "d", "", 0), 0, stages.Queued)
	h.offer(tenantJob("c2", "c", "small", 0), 0, stages.Overloaded) // the queue is full: not over a share
	s := h.snapshot(0)
	if r := s.Ledger.Refused; r.Overloaded != 3 || r.OverShare != 2 || s.Queued != 6 {
		t.Fatalf("queued %d, refused %+v; want 6 queued, 3 overloaded of which 2 over share", s.Queued, r)
	}
	h.ledger()
}

// storeTenantShareExits checks that a tenant's place comes back on every
// path by which its work leaves the queue, and only then.
func storeTenantShareExits(t *testing.T, ns NewStore) {
	tests := []struct {
		name string
		exit func(h harness) float64 // makes x1 leave the queue; returns the time after
	}{
		{"admitted", func(h harness) float64 {
			h.take(0, stages.Admitted, "x1")
			return 0
		}},
		{"expired", func(h harness) float64 {
			h.take(2.5, stages.Expired, "x1") // x2 is as old but still queued
			return 2.5
		}},
		{"cancelled", func(h harness) float64 {
			if d, err := h.s.Cancel(h.ctx, "x1", at(0)); err != nil || d != stages.Cancelled {
				h.t.Fatalf("Cancel = %v, %v", d, err)
			}
			return 0
		}},
		{"rotated", func(h harness) float64 {
			h.owners(2, "a")
			return 0
		}},
		{"forgotten", func(h harness) float64 {
			if err := h.s.Forget(h.ctx, "a", at(0)); err != nil {
				h.t.Fatal(err)
			}
			return 0
		}},
		{"taken after close", func(h harness) float64 {
			if err := h.s.Close(h.ctx); err != nil {
				h.t.Fatal(err)
			}
			h.offer(tenantJob("shut", "c", "big", 0), 0, stages.Closed) // closed before over share
			h.take(0, stages.Admitted, "x1")
			if err := h.s.Reopen(h.ctx); err != nil {
				h.t.Fatal(err)
			}
			return 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, ns, stages.Limits{Slots: 1, Waiting: 4, MaxAge: 2 * time.Second, TenantWaiting: 2})
			h.owners(1, "a", "b", "c")
			h.offer(tenantJob("x1", "a", "big", 0), 0, stages.Queued)
			h.offer(tenantJob("x2", "b", "big", 0), 0, stages.Queued)
			h.offer(tenantJob("x3", "c", "big", 0), 0, stages.Overloaded)
			now := tt.exit(h)
			h.offer(tenantJob("y", "c", "big", now), now, stages.Queued) // x1's place came back
			h.offer(tenantJob("z", "c", "big", now), now, stages.Overloaded)
			s := h.snapshot(now)
			if r := s.Ledger.Refused; r.Overloaded != 2 || r.OverShare != 2 {
				t.Fatalf("refused %+v; want 2 overloaded, both over share", r)
			}
			if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// gateTenantShare checks that a gate carries Job.Tenant to its store: work
// over its tenant's share gets no ticket, and the place comes back when the
// tenant's queued work is admitted.
func gateTenantShare(t *testing.T, ng NewGate) {
	h := newGateHarness(t, ng, stages.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute, TenantWaiting: 1}, "a", "b")
	submit := func(id, owner, tenant string, want stages.Disposition) stages.Pending {
		t.Helper()
		p, d, err := h.g.Submit(h.ctx, stages.Job{ID: id, Owner: owner, Generation: 1, Born: Epoch, Tenant: tenant})
		if err != nil || d != want || (p == nil) != (want != stages.Queued) {
			t.Fatalf("Submit(%s) = %v, %v, %v; want %v", id, p, d, err, want)
		}
		return p
	}
	a1 := submit("a1", "a", "big", stages.Queued)
	resolved(t, a1, stages.Admitted, Epoch) // admitted at once: its place is back
	a2 := submit("a2", "a", "big", stages.Queued)
	submit("a3", "a", "big", stages.Overloaded)
	b1 := submit("b1", "b", "small", stages.Queued)
	if _, err := h.g.Release(h.ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	resolved(t, a2, stages.Admitted, Epoch)
	a4 := submit("a4", "a", "big", stages.Queued)
	s, err := h.g.Snapshot(h.ctx)
	if err != nil || s.Ledger.Refused.OverShare != 1 || s.Ledger.Refused.Overloaded != 1 {
		t.Fatalf("Snapshot = %+v, %v", s.Ledger, err)
	}
	if _, err := h.g.Release(h.ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	resolved(t, b1, stages.Admitted, Epoch)
	pending(t, a4)
	if _, err := h.g.Release(h.ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	resolved(t, a4, stages.Admitted, Epoch)
	if _, err := h.g.Release(h.ctx, "a4"); err != nil {
		t.Fatal(err)
	}
}
