package redisstage_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/redis/go-redis/v9"
)

// Two replicas submitting one tenant's burst at once queue no more than its
// share together, while another tenant still gets in; the counts in Redis
// follow the queue as work leaves it through either replica, and no key is
// left once the tenant has nothing queued.
func TestFleetTenantShare(t *testing.T) {
	srv := redistest.Start(t)
	const share, burst = 3, 12
	name := fmt.Sprint("tenant", stageSeq.Add(1))
	l := stages.Limits{Slots: 1, Waiting: 8, MaxAge: time.Minute, TenantWaiting: share}
	var d [2]*redisstage.Dispatcher
	for i := range d {
		s, err := redisstage.New(srv.Client(t), name, l, redisstage.Options{LeaseTTL: 2 * time.Second, Warmup: -1})
		if err != nil {
			t.Fatal(err)
		}
		d[i] = redisstage.NewDispatcher(s, redisstage.DispatcherOptions{Poll: 20 * time.Millisecond})
		t.Cleanup(d[i].Stop)
	}
	raw := srv.Client(t)
	ctx := context.Background()
	born := time.Now()
	var omu sync.Mutex
	owner := map[string]*redisstage.Dispatcher{} // the replica each job was submitted through
	// trySubmit offers id, an owner of its own, through replica r.
	trySubmit := func(r int, id, tenant string) (*redisstage.Ticket, stages.Disposition, error) {
		omu.Lock()
		owner[id] = d[r]
		omu.Unlock()
		if err := d[r].Rotate(ctx, id, 1); err != nil {
			return nil, 0, err
		}
		return d[r].SubmitTicket(ctx, stages.Job{ID: id, Owner: id, Generation: 1, Born: born, Tenant: tenant})
	}
	submit := func(r int, id, tenant string) (*redisstage.Ticket, stages.Disposition) {
		t.Helper()
		tk, disp, err := trySubmit(r, id, tenant)
		if err != nil {
			t.Fatalf("Submit(%s): %v", id, err)
		}
		return tk, disp
	}
	counts := tenantCounts(t, raw, name)

	hold, disp := submit(0, "hold", "") // takes the only slot: the rest waits
	if disp != stages.Queued {
		t.Fatalf("hold: %v", disp)
	}
	waitFor(t, hold, stages.Admitted)

	var mu sync.Mutex
	queued := map[string]*redisstage.Ticket{}
	refused := 0
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			id := fmt.Sprint("big", i)
			tk, disp, err := trySubmit(i%2, id, "big")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("Submit(%s): %v", id, err)
			case disp == stages.Queued:
				queued[id] = tk
			case disp == stages.Overloaded:
				refused++
			default:
				t.Errorf("Submit(%s) = %v", id, disp)
			}
		})
	}
	wg.Wait()
	if len(queued) != share || refused != burst-share {
		t.Fatalf("tenant burst on two replicas: %d queued, %d refused; want %d queued", len(queued), refused, share)
	}
	if _, disp := submit(1, "small1", "small"); disp != stages.Queued {
		t.Fatalf("another tenant: %v", disp)
	}
	counts(map[string]string{"big": "3", "small": "1"})
	fs, err := d[1].Store().FleetSnapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := fs.Ledger.Refused; r.OverShare != burst-share || r.Overloaded != burst-share || fs.Queued != share+1 {
		t.Fatalf("queued %d, refused %+v", fs.Queued, r)
	}

	// The head (one of big's) is admitted when the slot comes back, and
	// learnt by its replica at once or by pub/sub.
	if _, err := d[0].Release(ctx, "hold"); err != nil {
		t.Fatal(err)
	}
	admitted := firstDone(t, queued)
	waitFor(t, admitted, stages.Admitted)
	delete(queued, admitted.Job.ID)
	counts(map[string]string{"big": "2", "small": "1"})

	// Cancel through one replica and Rotate through the other, each for work
	// submitted through either: the place comes back fleet-wide.
	var rest []string
	for id := range queued {
		rest = append(rest, id)
	}
	if d1, err := d[1].Cancel(ctx, rest[0]); err != nil || d1 != stages.Cancelled {
		t.Fatalf("Cancel = %v, %v", d1, err)
	}
	counts(map[string]string{"big": "1", "small": "1"})
	for _, id := range []string{"again1", "again2"} {
		if _, disp := submit(1, id, "big"); disp != stages.Queued {
			t.Fatalf("%s after a cancel: %v", id, disp)
		}
	}
	if _, disp := submit(0, "big-over", "big"); disp != stages.Overloaded {
		t.Fatalf("over the share again: %v", disp)
	}
	if err := d[0].Rotate(ctx, rest[1], 2); err != nil {
		t.Fatal(err)
	}
	if err := d[1].Forget(ctx, "again1"); err != nil {
		t.Fatal(err)
	}
	counts(map[string]string{"big": "1", "small": "1"})
	if _, err := d[0].Cancel(ctx, "again2"); err != nil {
		t.Fatal(err)
	}
	counts(map[string]string{"small": "1"}) // a tenant with nothing queued leaves no field
	if _, err := d[0].Cancel(ctx, "small1"); err != nil {
		t.Fatal(err)
	}
	counts(nil) // nothing queued: no key left behind

	// A lost epoch (Redis lost data; here only the epoch) recounts the
	// tenants from the queue that is left, whatever the counts said.
	for i := range share {
		if _, disp := submit(i%2, fmt.Sprint("late", i), "big"); disp != stages.Queued {
			t.Fatalf("late%d: %v", i, disp)
		}
	}
	prefix := "fd:{" + name + "}:"
	if err := raw.HSet(ctx, prefix+"tw", "big", 99, "ghost", 5).Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw.Del(ctx, prefix+"epoch").Err(); err != nil {
		t.Fatal(err)
	}
	if _, disp := submit(1, "late-over", "big"); disp != stages.Overloaded {
		t.Fatalf("after the recount: %v", disp)
	}
	counts(map[string]string{"big": "3"})
	for i := range share {
		if _, err := d[i%2].Cancel(ctx, fmt.Sprint("late", i)); err != nil {
			t.Fatal(err)
		}
	}
	counts(nil)
	if _, err := owner[admitted.Job.ID].Release(ctx, admitted.Job.ID); err != nil {
		t.Fatal(err)
	}
	fs, err = d[0].Store().FleetSnapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	if fs.Queued != 0 || fs.Leased != 0 || fs.Ledger.Refused.OverShare != burst-share+2 {
		t.Fatalf("at the end: %+v", fs.Snapshot)
	}
}

// firstDone waits for one of tickets to resolve and returns it.
func firstDone(t *testing.T, tickets map[string]*redisstage.Ticket) *redisstage.Ticket {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, tk := range tickets {
			select {
			case <-tk.Done():
				return tk
			default:
			}
		}
	}
	t.Fatal("no ticket resolved")
	return nil
}

// tenantCounts returns a check of the stage's per-tenant counts in Redis;
// nil wants no key at all.
func tenantCounts(t *testing.T, raw *redis.Client, name string) func(want map[string]string) {
	key := "fd:{" + name + "}:tw"
	return func(want map[string]string) {
		t.Helper()
		got, err := raw.HGetAll(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := raw.Exists(context.Background(), key).Result(); want == nil && n != 0 {
			t.Fatalf("key %s left behind: %v", key, got)
		}
		if !maps.Equal(got, want) && !(want == nil && len(got) == 0) {
			t.Fatalf("tenant counts %v, want %v", got, want)
		}
	}
}

func waitFor(t *testing.T, tk *redisstage.Ticket, want stages.Disposition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if got, err := tk.Wait(ctx); err != nil || got != want {
		t.Fatalf("%s: %v, %v; want %v", tk.Job.ID, got, err, want)
	}
}
