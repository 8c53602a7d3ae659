package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// Three replicas' fallback services share one bounded CallbackStore: under
// concurrent requests through all of them, exactly the fleet's bound of
// callbacks is accepted (each replica's own stage would take more), the
// rest are refused Overloaded, and a claim frees a place fleet-wide.
func TestCallbackBoundFleetWide(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const bound, replicas, each = 5, 3, 6
	var svcs []*fallback.Service
	cfg := workerConfig()
	cfg.CallbackQueue = bound
	cfg.CallbackSlots = 2
	cfg.CallbackLease = time.Minute // the claims below must not lapse while the test runs
	for range replicas {
		st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", cfg)
		svc, err := fallback.New(ctx, cfg, nil, nil, fallback.WithStore(st))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		svcs = append(svcs, svc)
	}
	var mu sync.Mutex
	got := map[stages.Disposition]int{}
	var wg sync.WaitGroup
	for r, svc := range svcs {
		for i := range each {
			wg.Go(func() {
				res, err := svc.RequestCallback(ctx, fallback.CallbackRequest{Call: fmt.Sprint("c", r, "-", i), Turn: "t1",
					Number: fmt.Sprintf("+155501%02d", r*each+i), Consent: true})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[res.Disposition]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if got[stages.Queued] != bound || got[stages.Overloaded] != replicas*each-bound {
		t.Fatalf("dispositions %v, want %d queued and the rest overloaded", got, bound)
	}
	pending, err := svcs[0].Store().List(ctx, 0, fallback.StatusPending)
	if err != nil || len(pending) != bound {
		t.Fatalf("pending in the fleet: %d, %v", len(pending), err)
	}
	// A claim through any replica's store frees one pending place.
	if _, err := svcs[1].Store().Claim(ctx, pending[0].Ref, "op", epoch, epoch.Add(1e12)); err != nil {
		t.Fatal(err)
	}
	res, err := svcs[2].RequestCallback(ctx, fallback.CallbackRequest{Call: "late", Turn: "t1", Number: "+15550199", Consent: true})
	if err != nil || res.Disposition != stages.Queued {
		t.Fatalf("after a claim: %+v %v", res, err)
	}
	res, err = svcs[0].RequestCallback(ctx, fallback.CallbackRequest{Call: "later", Turn: "t1", Number: "+15550198", Consent: true})
	if err != nil || res.Disposition != stages.Overloaded {
		t.Fatalf("full again: %+v %v", res, err)
	}
	// Claim slots are the fleet's too: one claim is held, so each other
	// replica gets one more and then none.
	if _, err := svcs[2].ClaimCallback(ctx, "op2"); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs[0].ClaimCallback(ctx, "op3"); !errors.Is(err, fallback.ErrSlotsBusy) {
		t.Fatalf("third claim with 2 slots in the fleet: %v", err)
	}
	sn := svcs[0].Snapshot(prompt.KindCallback)
	deadline := time.Now().Add(5 * time.Second)
	for sn.Leased != 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		sn = svcs[0].Snapshot(prompt.KindCallback)
	}
	if sn.Leased != 2 || sn.Queued != bound-1 || sn.Ledger.Check(sn.Queued, sn.Leased) != nil {
		t.Fatalf("fleet snapshot %+v: %v", sn, sn.Ledger.Check(sn.Queued, sn.Leased))
	}
}

// Three replicas' handoffs share one fleet-wide queue: under concurrent
// requests exactly the waiting bound is queued, the rest are refused
// Overloaded, and a handoff that resolves (the caller hung up) gives its
// place back to any replica at once.
func TestHandoffBoundFleetWide(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const bound, replicas, each = 4, 3, 4
	cfg := workerConfig()
	cfg.HandoffQueue = bound
	var svcs []*fallback.Service
	for range replicas {
		svc, err := fallback.New(ctx, cfg, nil, nil, fallback.WithStore(redisqueue.NewCallbackStore(srv.Client(t), "callbacks", cfg)),
			fallback.WithHandoffQueue(redisqueue.NewHandoffQueue(srv.Client(t), "handoffs", cfg, time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		svcs = append(svcs, svc)
	}
	var mu sync.Mutex
	got := map[stages.Disposition]int{}
	var queued []*fallback.Handoff
	var wg sync.WaitGroup
	for r, svc := range svcs {
		for i := range each {
			wg.Go(func() {
				h, d, err := svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: fmt.Sprint("c", r, "-", i), Turn: "t1"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[d]++
				if h != nil {
					queued = append(queued, h)
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if got[stages.Queued] != bound || got[stages.Overloaded] != replicas*each-bound {
		t.Fatalf("dispositions %v, want %d queued and the rest overloaded", got, bound)
	}
	positions := map[int]bool{}
	for _, h := range queued {
		p, ok := h.Position()
		if !ok || p < 1 || p > bound || positions[p] {
			t.Fatalf("position %d %v among %v", p, ok, positions)
		}
		positions[p] = true
	}
	queued[0].Cancel()
	h, d, err := svcs[2].RequestHandoff(ctx, fallback.HandoffRequest{Call: "late", Turn: "t1"})
	if err != nil || d != stages.Queued {
		t.Fatalf("the cancelled handoff's place did not come back: %v %v", d, err)
	}
	h.Cancel()
}
