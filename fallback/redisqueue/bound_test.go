package redisqueue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
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
	for range replicas {
		st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks").Bound(bound)
		svc, err := fallback.New(ctx, workerConfig(), nil, nil, fallback.WithStore(st))
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
	if _, err := svcs[1].Store().Claim(ctx, pending[0].Ticket, "op", epoch, epoch.Add(1e12)); err != nil {
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
}

// Three replicas' handoffs share one fleet-wide bound through a redisstage
// stage: under concurrent requests exactly the bound is queued, the rest
// are refused Overloaded, and a handoff that resolves (the caller hung up)
// gives its place back to any replica.
func TestHandoffBoundFleetWide(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const bound, replicas, each = 4, 3, 4
	var svcs []*fallback.Service
	for range replicas {
		st, err := redisstage.New(srv.Client(t), "handoff", stages.Limits{Slots: bound, Waiting: 1, MaxAge: time.Minute},
			redisstage.Options{LeaseTTL: 2 * time.Second, Warmup: -1})
		if err != nil {
			t.Fatal(err)
		}
		hb := redisqueue.NewHandoffBound(redisstage.NewDispatcher(st, redisstage.DispatcherOptions{}), time.Second)
		cfg := workerConfig()
		cfg.HandoffQueue = replicas * each // each replica alone would take them all
		svc, err := fallback.New(ctx, cfg, nil, nil, fallback.WithStore(redisqueue.NewCallbackStore(srv.Client(t), "callbacks")),
			fallback.WithHandoffBound(hb))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close(); hb.Stop() })
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
	queued[0].Cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, d, err := svcs[2].RequestHandoff(ctx, fallback.HandoffRequest{Call: "late", Turn: "t1"})
		if err != nil {
			t.Fatal(err)
		}
		if d == stages.Queued {
			h.Cancel()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled handoff's place never came back: %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
