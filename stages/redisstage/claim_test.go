package redisstage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// claimFleet is two replicas of one claim stage.
func claimFleet(t *testing.T, srv *redistest.Server, l stages.Limits, ttl time.Duration) (a, b *redisstage.Dispatcher) {
	t.Helper()
	name := fmt.Sprint("claim", stageSeq.Add(1))
	var ds []*redisstage.Dispatcher
	for range 2 {
		s, err := redisstage.New(srv.Client(t), name, l, redisstage.Options{LeaseTTL: ttl, Warmup: -1})
		if err != nil {
			t.Fatal(err)
		}
		d := redisstage.NewDispatcher(s, redisstage.DispatcherOptions{Poll: 20 * time.Millisecond, Claim: true})
		t.Cleanup(d.Stop)
		ds = append(ds, d)
	}
	return ds[0], ds[1]
}

// A caller's work queued on one replica is claimed on another: the
// caller's Pending resolves Admitted there, the claimer holds the lease
// and releases it, and the submitter holds nothing.
func TestClaimAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a, b := claimFleet(t, srv, stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}, 2*time.Second)
	ctx := context.Background()
	if err := a.Rotate(ctx, "caller", 1); err != nil {
		t.Fatal(err)
	}
	p, d, err := a.Submit(ctx, stages.Job{ID: "h1", Owner: "caller", Generation: 1, Born: time.Now()})
	if err != nil || d != stages.Queued {
		t.Fatalf("Submit = %v, %v", d, err)
	}
	d, id, err := b.Claim(ctx, "")
	if err != nil || d != stages.Admitted || id != "h1" {
		t.Fatalf("Claim on the other replica = %v %q, %v", d, id, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := p.Wait(wctx); err != nil || got != stages.Admitted {
		t.Fatalf("the caller's Pending = %v, %v; want Admitted", got, err)
	}
	if _, err := a.Release(ctx, "h1"); !errors.Is(err, admit.ErrNoLease) {
		t.Fatalf("Release on the submitter = %v, want ErrNoLease: the claimer holds it", err)
	}
	if d, err := b.Release(ctx, "h1"); err != nil || d != stages.Completed {
		t.Fatalf("Release on the claimer = %v, %v", d, err)
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Leased != 0 || s.Ledger.Completed != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

// A claimer's replica that stops renewing loses the claim after the TTL:
// the slot is the fleet's again, and the stale release is fenced.
func TestClaimLostWhenClaimerStops(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 400 * time.Millisecond
	a, b := claimFleet(t, srv, stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}, ttl)
	ctx := context.Background()
	for _, o := range []string{"c1", "c2"} {
		if err := a.Rotate(ctx, o, 1); err != nil {
			t.Fatal(err)
		}
		if _, d, err := a.Submit(ctx, stages.Job{ID: o, Owner: o, Generation: 1, Born: time.Now()}); err != nil || d != stages.Queued {
			t.Fatalf("Submit(%s) = %v, %v", o, d, err)
		}
	}
	if d, id, err := b.Claim(ctx, ""); err != nil || d != stages.Admitted || id != "c1" {
		t.Fatalf("Claim = %v %q, %v", d, id, err)
	}
	if d, _, err := a.Claim(ctx, ""); err != nil || d != claim.Busy {
		t.Fatalf("second Claim while the slot is held = %v, %v; want Busy", d, err)
	}
	b.Stop() // the claimer's replica dies: nobody renews c1
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, id, err := a.Claim(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if d == stages.Admitted {
			if id != "c2" {
				t.Fatalf("claimed %q after the loss, want c2", id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lost claim's slot never came back (last %v)", d)
		}
		time.Sleep(ttl / 4)
	}
	s, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ledger.Lost != 1 {
		t.Fatalf("ledger %+v: want the claim counted lost", s.Ledger)
	}
	if _, err := a.Release(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
}
