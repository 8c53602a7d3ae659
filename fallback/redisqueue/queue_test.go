package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/redis/go-redis/v9"
)

func TestBoundedIdempotentAcknowledged(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	q, err := redisqueue.New(ctx, srv.Client(t), "callbacks", redisqueue.Options{MaxLen: 2})
	if err != nil {
		t.Fatal(err)
	}
	id1, created, err := q.Enqueue(ctx, "call-1", "t1", "+15550100")
	if err != nil || !created {
		t.Fatalf("first enqueue: %v %v", created, err)
	}
	again, created, err := q.Enqueue(ctx, "call-1", "t1", "+15550100")
	if err != nil || created || again != id1 {
		t.Fatalf("repeat enqueue = %q %v %v, want %q not created", again, created, err, id1)
	}
	if _, _, err := q.Enqueue(ctx, "call-2", "t1", "+15550101"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(ctx, "call-3", "t1", "+15550102"); !errors.Is(err, redisqueue.ErrFull) {
		t.Fatalf("third enqueue into a queue of 2: %v", err)
	}
	e, err := q.Claim(ctx, "w1", 0)
	if err != nil || e.ID != id1 || e.Call != "call-1" || e.Payload != "+15550100" {
		t.Fatalf("Claim = %+v, %v", e, err)
	}
	if ok, err := q.Ack(ctx, e); err != nil || !ok {
		t.Fatalf("Ack = %v, %v", ok, err)
	}
	if ok, _ := q.Ack(ctx, e); ok {
		t.Fatal("second Ack acknowledged again")
	}
	if _, created, _ := q.Enqueue(ctx, "call-1", "t1", "+15550100"); created {
		t.Fatal("a done (call, turn) was enqueued again")
	}
	if _, _, err := q.Enqueue(ctx, "call-3", "t1", "+15550102"); err != nil {
		t.Fatalf("enqueue after an ack freed a place: %v", err)
	}
	if n, _ := q.Len(ctx); n != 2 {
		t.Fatalf("Len = %d", n)
	}
}

// Replicas enqueueing at once never overfill the queue.
func TestConcurrentBound(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const max = 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for r := range 3 {
		q, err := redisqueue.New(ctx, srv.Client(t), "handoffs", redisqueue.Options{MaxLen: max})
		if err != nil {
			t.Fatal(err)
		}
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					_, created, err := q.Enqueue(ctx, fmt.Sprint("call-", r, "-", g, "-", i), "t", "")
					if err != nil && !errors.Is(err, redisqueue.ErrFull) {
						t.Error(err)
						return
					}
					if created {
						mu.Lock()
						accepted++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	if accepted != max {
		t.Fatalf("accepted %d, bound %d", accepted, max)
	}
}

// A worker that claims a ticket and dies (its connection gone, no Ack)
// does not lose it: after ClaimIdle another worker reclaims it.
func TestCallbackSurvivesWorkerCrash(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	opt := redisqueue.Options{ClaimIdle: 200 * time.Millisecond}
	q, err := redisqueue.New(ctx, srv.Client(t), "callbacks", opt)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := q.Enqueue(ctx, "call-9", "t4", "+15550109")
	if err != nil {
		t.Fatal(err)
	}
	doomed := redis.NewClient(redistest.Options(srv.Addr))
	dq, err := redisqueue.New(ctx, doomed, "callbacks", opt)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := dq.Claim(ctx, "doomed", 0); err != nil || e.ID != id {
		t.Fatalf("doomed worker's claim: %+v %v", e, err)
	}
	doomed.Close() // the worker dies holding the ticket
	if _, err := q.Claim(ctx, "survivor", 0); !errors.Is(err, redisqueue.ErrEmpty) {
		t.Fatalf("claim before the idle time: %v", err)
	}
	time.Sleep(250 * time.Millisecond)
	e, err := q.Claim(ctx, "survivor", 0)
	if err != nil || e.ID != id || !e.Reclaimed || e.Call != "call-9" {
		t.Fatalf("reclaim = %+v, %v", e, err)
	}
	if ok, err := q.Ack(ctx, e); err != nil || !ok {
		t.Fatalf("Ack = %v %v", ok, err)
	}
	if n, _ := q.Len(ctx); n != 0 {
		t.Fatalf("Len after ack = %d", n)
	}
}

func TestUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	q, err := redisqueue.New(ctx, srv.Client(t), "callbacks", redisqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, _, err := q.Enqueue(ctx, "c", "t", ""); !errors.Is(err, redisqueue.ErrUnavailable) {
		t.Fatalf("enqueue with Redis down: %v", err)
	}
}
