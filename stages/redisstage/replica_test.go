package redisstage_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/redis/go-redis/v9"
)

// The test binary doubles as a replica process: with replicaEnv set to
// "ADDR STAGE N", TestMain runs replicaMain instead of the tests.
const replicaEnv = "FRONTDOOR_TEST_REPLICA"

// replicaTTL is long enough that a replica starved of CPU on a loaded CI
// machine (two cores, the whole suite under -race) still renews in time.
const replicaTTL = 3 * time.Second

// replicaMain takes N leases through a Dispatcher, renews them, prints
// "held" and waits to be killed.
func replicaMain() int {
	var addr, stage string
	var n int
	fmt.Sscan(os.Getenv(replicaEnv), &addr, &stage, &n)
	rdb := redis.NewClient(redistest.Options(addr))
	s, err := redisstage.New(rdb, stage, stages.Limits{Slots: n, Waiting: n, MaxAge: time.Hour},
		redisstage.Options{LeaseTTL: replicaTTL, Warmup: -1})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	d := redisstage.NewDispatcher(s, redisstage.DispatcherOptions{})
	ctx := context.Background()
	if err := d.Rotate(ctx, "replica", 1); err != nil {
		fmt.Println("error", err)
		return 1
	}
	for i := range n {
		p, disp, err := d.Submit(ctx, stages.Job{ID: fmt.Sprint("r", i), Owner: "replica", Generation: 1, Born: time.Now()})
		if err != nil || disp != stages.Queued {
			fmt.Println("error", disp, err)
			return 1
		}
		if r, _ := p.Wait(ctx); r != stages.Admitted {
			fmt.Println("error", r)
			return 1
		}
	}
	fmt.Println("held")
	select {}
}

// A replica killed with SIGKILL while holding every slot: its leases stay
// held (capacity reduced, never over-admitted) until their TTL runs out on
// the server's clock, and come back then.
func TestKilledReplicaLeasesReturnAfterTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const slots = 2
	stage := fmt.Sprint("killed", stageSeq.Add(1))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", replicaEnv, srv.Addr, stage, slots))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("replica said %q, %v", line, err)
	}
	s, err := redisstage.New(srv.Client(t), stage, stages.Limits{Slots: slots, Waiting: slots, MaxAge: time.Hour},
		redisstage.Options{LeaseTTL: replicaTTL, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Rotate(ctx, "probe", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Alive, the replica renews: its leases outlive one TTL.
	time.Sleep(replicaTTL + replicaTTL/2)
	if snap, err := s.Snapshot(ctx, time.Now()); err != nil || snap.Leased != slots {
		t.Fatalf("live replica's leases: %+v, %v", snap, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	// The dead replica's leases expire at the server times its last
	// renewals set; no slot may come back before the earliest of them.
	rdb := srv.Client(t)
	exp, err := rdb.ZRangeWithScores(ctx, "fd:{"+stage+"}:lease", 0, 0).Result()
	if err != nil || len(exp) != 1 {
		t.Fatalf("lease expiries: %v, %v", exp, err)
	}
	earliest := time.UnixMilli(int64(exp[0].Score))
	for i := 0; ; i++ {
		now := time.Now()
		if _, err := s.Offer(ctx, stages.Job{ID: fmt.Sprint("p", i), Owner: "probe", Generation: 1, Born: now}, now); err != nil {
			t.Fatal(err)
		}
		d, id, err := s.Take(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if d == stages.Admitted {
			// Read after the take: a server time still before the
			// expiry proves the slot came back early.
			after, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if after.Before(earliest) {
				t.Fatalf("slot came back by server time %v, before the lease's expiry %v", after, earliest)
			}
			if _, err := s.Release(ctx, id); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Since(killed) > 3*replicaTTL {
			t.Fatalf("leases did not come back within 3 TTLs of the kill: last %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("first slot back %v after the kill (TTL %v)", time.Since(killed), replicaTTL)
	var fs redisstage.Snapshot
	for {
		fs, err = s.FleetSnapshot(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if fs.Ledger.Lost == slots || time.Since(killed) > 3*replicaTTL {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fs.Ledger.Lost != slots {
		t.Fatalf("after TTL: %+v", fs)
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
}

// A holder that stopped renewing loses its lease after the TTL; its release
// and renewal are refused as fenced, and the slot's next holder gets a
// greater token.
func TestFencedStaleReleaseRefused(t *testing.T) {
	srv := redistest.Start(t)
	s := newStage(t, srv, stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Hour}, redisstage.Options{LeaseTTL: 300 * time.Millisecond})
	ctx := context.Background()
	now := time.Now()
	if err := s.Rotate(ctx, "a", 1, now); err != nil {
		t.Fatal(err)
	}
	offerTake := func(id string) redisstage.Lease {
		t.Helper()
		now := time.Now()
		if d, err := s.Offer(ctx, stages.Job{ID: id, Owner: "a", Generation: 1, Born: now}, now); err != nil || d != stages.Queued {
			t.Fatalf("Offer(%s) = %v, %v", id, d, err)
		}
		d, l, err := s.TakeLease(ctx, now)
		if err != nil || d != stages.Admitted {
			t.Fatalf("TakeLease(%s) = %v, %v", id, d, err)
		}
		return l
	}
	old := offerTake("old")
	if _, err := s.Renew(ctx, old); err != nil {
		t.Fatalf("renew while held: %v", err)
	}
	if _, err := s.ReleaseLease(ctx, redisstage.Lease{ID: old.ID, Token: old.Token + 1}); !errors.Is(err, stages.ErrFenced) {
		t.Fatalf("release with a wrong token: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // the holder "paused" past its TTL
	fresh := offerTake("fresh")
	if fresh.Token <= old.Token {
		t.Fatalf("token did not advance: %d then %d", old.Token, fresh.Token)
	}
	if _, err := s.Renew(ctx, old); !errors.Is(err, stages.ErrFenced) {
		t.Fatalf("stale renew: %v", err)
	}
	if _, err := s.ReleaseLease(ctx, old); !errors.Is(err, stages.ErrFenced) {
		t.Fatalf("stale release: %v", err)
	}
	if d, err := s.ReleaseLease(ctx, fresh); err != nil || d != stages.Completed {
		t.Fatalf("current holder's release = %v, %v", d, err)
	}
}
