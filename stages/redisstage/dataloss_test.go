package redisstage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// TestDataLossCallsGoOn restarts a real redis-server without persistence
// under a replica holding a lease for a call in progress: the lease is not
// lost but granted again at the replica's next renewal (a new token, the
// old one fenced), the call's generation is registered again so that its
// next work is not refused stale, and new calls are admitted once the
// warm-up (one TTL) has passed, never beyond the slots.
func TestDataLossCallsGoOn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = 600 * time.Millisecond
	rdb := srv.Client(t)
	name := fmt.Sprint("goon", stageSeq.Add(1))
	s, err := redisstage.New(rdb, name, stages.Limits{Slots: 2, Waiting: 4, MaxAge: time.Minute},
		redisstage.Options{LeaseTTL: ttl}) // warm-up: one TTL

	if err != nil {
		t.Fatal(err)
	}
	d := redisstage.NewDispatcher(s, redisstage.DispatcherOptions{Poll: 20 * time.Millisecond})
	defer d.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admit := func(owner, id string) (*redisstage.Ticket, stages.Disposition) {
		t.Helper()
		tk, disp, err := d.SubmitTicket(ctx, stages.Job{ID: id, Owner: owner, Generation: 1, Born: time.Now()})
		if disp != stages.Queued {
			if err != nil && disp != stages.Closed {
				t.Fatalf("submit %s: %v %v", id, disp, err)
			}
			return nil, disp
		}
		if got, err := tk.Wait(ctx); err != nil || got != stages.Admitted {
			t.Fatalf("%s: %v %v", id, got, err)
		}
		return tk, stages.Admitted
	}
	for s.Ready(ctx) != nil { // first use warms up too
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Rotate(ctx, "call", 1); err != nil {
		t.Fatal(err)
	}
	held, _ := admit("call", "call/1")
	old, _ := held.Lease()

	// The data is gone: a restart without persistence.
	srv.Stop()
	// Taken before the restart: the warm-up starts when the new Redis
	// does, which is after this and before Restart returns.
	back := time.Now()
	srv.Restart()
	if err := s.Ready(ctx); err == nil {
		t.Fatal("ready right after data loss")
	}

	// The held lease is granted again by its renewal.
	for {
		if l, _ := held.Lease(); l.Token != old.Token {
			if l.Token <= old.Token {
				t.Fatalf("new token %d not above %d", l.Token, old.Token)
			}
			break
		}
		select {
		case <-held.Lost():
			t.Fatal("the lease of a call in progress was lost with the data")
		case <-ctx.Done():
			t.Fatal("lease never granted again")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := s.ReleaseLease(ctx, old); err == nil {
		t.Fatal("the old token still releases")
	}
	// The call's next work is not stale: its generation was registered again.
	var first time.Duration
	for {
		tk, disp := admit("call", fmt.Sprint("call/", time.Now().UnixNano()))
		if disp == stages.Stale {
			t.Fatal("a call in progress refused stale after data loss")
		}
		if tk != nil {
			first = time.Since(back)
			if _, err := d.Release(ctx, tk.Job.ID); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("first admission %v after Redis came back (lease TTL %v)", first, ttl)
	if first < ttl {
		t.Fatalf("admitted %v after data loss, inside the warm-up of %v", first, ttl)
	}
	// New calls: one slot is left beside the call in progress.
	if err := d.Rotate(ctx, "new", 1); err != nil {
		t.Fatal(err)
	}
	if _, disp := admit("new", "new/1"); disp != stages.Admitted {
		t.Fatalf("new call: %v", disp)
	}
	if err := d.Rotate(ctx, "third", 1); err != nil {
		t.Fatal(err)
	}
	tk, disp, err := d.SubmitTicket(ctx, stages.Job{ID: "third/1", Owner: "third", Generation: 1, Born: time.Now()})
	if err != nil || disp != stages.Queued {
		t.Fatalf("third: %v %v", disp, err)
	}
	select {
	case <-tk.Done():
		t.Fatalf("admitted beyond the slots: %v", tk)
	case <-time.After(2 * ttl):
	}
	if n := rdb.ZCard(ctx, "fd:{"+name+"}:lease").Val(); n != 2 {
		t.Fatalf("%d leases in Redis, want 2", n)
	}
}
