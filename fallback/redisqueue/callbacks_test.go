package redisqueue_test

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

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCallbackStoreContract(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", workerConfig())
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

	a, created, err := st.Accept(ctx, fallback.Callback{Ref: "cb_a", Call: "c1", Turn: "t1", Number: "+15550100", Accepted: at(0), Tenant: "acme"})
	if err != nil || !created || a.Status != fallback.StatusPending || !a.Accepted.Equal(at(0)) || a.Number != "+15550100" || a.Tenant != "acme" {
		t.Fatalf("accept: %+v %v %v", a, created, err)
	}
	again, created, err := st.Accept(ctx, fallback.Callback{Ref: "cb_other", Call: "c1", Turn: "t1", Number: "+15550100", Accepted: at(1)})
	if err != nil || created || again.Ref != "cb_a" {
		t.Fatalf("same (call, turn) again: %+v %v %v", again, created, err)
	}
	// ("c", "1:t") and ("c1", "t") are different calls.
	if _, created, err := st.Accept(ctx, fallback.Callback{Ref: "cb_b", Call: "c", Turn: "1:t1", Number: "+15550101", Accepted: at(2)}); err != nil || !created {
		t.Fatalf("distinct key: %v %v", created, err)
	}
	if _, created, _ := st.Accept(ctx, fallback.Callback{Ref: "cb_c", Call: "c3", Turn: "t1", Number: "+15550102", Accepted: at(1)}); !created {
		t.Fatal("third not created")
	}
	if got, ok, err := st.Find(ctx, "c1", "t1"); err != nil || !ok || got.Ref != "cb_a" {
		t.Fatalf("find: %+v %v %v", got, ok, err)
	}
	if _, ok, err := st.Find(ctx, "nobody", "t1"); err != nil || ok {
		t.Fatalf("find missing: %v %v", ok, err)
	}
	if _, err := st.Get(ctx, "cb_none"); !errors.Is(err, fallback.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	refs := func(cs []fallback.Callback) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Ref)
		}
		return strings.Join(out, ",")
	}
	if l, err := st.List(ctx, 0); err != nil || refs(l) != "cb_a,cb_c,cb_b" {
		t.Fatalf("list oldest first: %s %v", refs(l), err)
	}
	if l, _ := st.List(ctx, 2, fallback.StatusPending); refs(l) != "cb_a,cb_c" {
		t.Fatalf("list limit: %s", refs(l))
	}

	c, err := st.Claim(ctx, "cb_a", "op1", at(10), at(70))
	if err != nil || c.Status != fallback.StatusClaimed || c.Attempt != 1 || c.Operator != "op1" || !c.LeaseUntil.Equal(at(70)) {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if _, err := st.Claim(ctx, "cb_a", "op2", at(11), at(71)); !errors.Is(err, fallback.ErrNotLive) {
		t.Fatalf("second claim: %v", err)
	}
	if err := st.Return(ctx, "cb_a", 1, at(70)); err != nil {
		t.Fatalf("return: %v", err)
	}
	c, _ = st.Claim(ctx, "cb_a", "op2", at(71), at(131))
	if c.Attempt != 2 {
		t.Fatalf("second attempt %+v", c)
	}
	// The first claimant's late finish is fenced by its attempt.
	if _, err := st.Finish(ctx, "cb_a", 1, fallback.StatusCompleted, "late", at(72)); !errors.Is(err, fallback.ErrLeaseLost) {
		t.Fatalf("stale finish: %v", err)
	}
	if err := st.Return(ctx, "cb_a", 1, at(72)); !errors.Is(err, fallback.ErrLeaseLost) {
		t.Fatalf("stale return: %v", err)
	}
	if f, err := st.Finish(ctx, "cb_a", 2, fallback.StatusCompleted, "called back", at(73)); err != nil || f.Status != fallback.StatusCompleted || f.Note != "called back" {
		t.Fatalf("finish: %+v %v", f, err)
	}
	if err := st.Expire(ctx, "cb_a", at(74)); !errors.Is(err, fallback.ErrNotLive) {
		t.Fatalf("expire finished: %v", err)
	}
	if err := st.Expire(ctx, "cb_c", at(74)); err != nil {
		t.Fatal(err)
	}
	st.Claim(ctx, "cb_b", "op3", at(75), at(90))
	if _, err := st.Finish(ctx, "cb_b", 0, fallback.StatusFailed, "no answer", at(76)); err != nil {
		t.Fatalf("override finish: %v", err)
	}
	if _, err := st.Finish(ctx, "cb_b", 0, fallback.StatusPending, "", at(76)); err == nil {
		t.Fatal("finish to pending accepted")
	}
	for _, tc := range []struct {
		st   fallback.Status
		want string
	}{{fallback.StatusCompleted, "cb_a"}, {fallback.StatusExpired, "cb_c"}, {fallback.StatusFailed, "cb_b"}, {fallback.StatusPending, ""}} {
		if l, _ := st.List(ctx, 0, tc.st); refs(l) != tc.want {
			t.Errorf("list %s: %s, want %s", tc.st, refs(l), tc.want)
		}
	}
}

func TestCallbackStoreUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", workerConfig())
	srv.Stop()
	_, _, err := st.Accept(context.Background(), fallback.Callback{Ref: "cb_a", Call: "c1", Turn: "t1", Number: "+15550100", Accepted: epoch})
	if !errors.Is(err, redisqueue.ErrUnavailable) {
		t.Fatalf("accept with Redis down: %v", err)
	}
}

const workerEnv = "FRONTDOOR_REDISQUEUE_WORKER"

// TestCallbackWorker is the worker process of TestCallbacksSurviveWorkerCrash:
// it books two callbacks through a fallback.Service on Redis, claims one as
// an operator, says so, and waits to be killed.
func TestCallbackWorker(t *testing.T) {
	addr := os.Getenv(workerEnv)
	if addr == "" {
		return // only as the child of the crash test
	}
	rdb := redis.NewClient(redistest.Options(addr))
	defer rdb.Close()
	cfg := workerConfig()
	svc, err := fallback.New(context.Background(), cfg, nil, nil, fallback.WithStore(redisqueue.NewCallbackStore(rdb, "callbacks", cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, call := range []string{"call-1", "call-2"} {
		res, err := svc.RequestCallback(context.Background(), fallback.CallbackRequest{Call: call, Turn: "t1", Number: "+15550100", Consent: true})
		if err != nil || res.Ref == "" {
			t.Fatalf("request: %+v %v", res, err)
		}
		fmt.Println("booked", res.Ref)
	}
	c, err := svc.ClaimCallback(context.Background(), "op-dead")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("claimed", c.Ref, c.Attempt)
	time.Sleep(time.Minute) // killed long before
}

func workerConfig() fallback.Config {
	cfg := fallback.DefaultConfig()
	cfg.DataDir = ""
	cfg.CallbackLease = 500 * time.Millisecond
	return cfg
}

// Callbacks booked through one worker, and the one it had claimed, are not
// lost when it dies with kill -9: another replica on the same Redis finds
// both, the dead worker's claim comes back once its lease ran out, and the
// dead claim's attempt can no longer finish it.
func TestCallbacksSurviveWorkerCrash(t *testing.T) {
	srv := redistest.Start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCallbackWorker$", "-test.v")
	cmd.Env = append(os.Environ(), workerEnv+"="+srv.Addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var booked []string
	var claimed string
	var attempt int
	sc := bufio.NewScanner(out)
	for claimed == "" && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "booked":
			booked = append(booked, f[1])
		case len(f) == 3 && f[0] == "claimed":
			claimed = f[1]
			fmt.Sscan(f[2], &attempt)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if len(booked) != 2 || claimed != booked[0] {
		t.Fatalf("worker booked %v claimed %q", booked, claimed)
	}

	ctx := context.Background()
	store := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", workerConfig())
	time.Sleep(workerConfig().CallbackLease) // the dead worker's claim runs out
	svc, err := fallback.New(ctx, workerConfig(), nil, nil, fallback.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	got := map[string]int{}
	for range 2 {
		c, err := svc.ClaimCallback(ctx, "op-alive")
		if err != nil {
			t.Fatalf("claim on the surviving replica: %v (have %v)", err, got)
		}
		got[c.Ref] = c.Attempt
		if _, err := svc.FinishCallback(ctx, c.Ref, c.Attempt, fallback.StatusCompleted, "called back"); err != nil {
			t.Fatal(err)
		}
	}
	if got[booked[0]] != attempt+1 || got[booked[1]] != 1 {
		t.Fatalf("claimed %v, want %s at attempt %d and %s at 1", got, booked[0], attempt+1, booked[1])
	}
	if _, err := store.Finish(ctx, claimed, attempt, fallback.StatusFailed, "from the dead", time.Now()); !errors.Is(err, fallback.ErrLeaseLost) {
		t.Fatalf("dead worker's attempt finishing: %v", err)
	}
}

// A callback nobody claimed within -callback-max-wait expires in the sweep
// (and only then); a claim whose lease ran out goes back to its place, ahead
// of later callbacks, and its attempt is fenced. The ledger balances.
func TestCallbackQueueTimeouts(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	cfg := workerConfig() // lease 500ms
	cfg.CallbackMaxWait = time.Hour
	st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", cfg)
	now := time.Now()
	for i, tk := range []string{"cb_1", "cb_2", "cb_3"} {
		if _, _, err := st.Accept(ctx, fallback.Callback{Ref: tk, Call: tk, Turn: "t", Number: "+15550100", Accepted: now.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := st.Next(ctx, "op-gone", "", now)
	if err != nil || first.Ref != "cb_1" {
		t.Fatalf("next: %+v %v", first, err)
	}
	if second, err := st.Next(ctx, "op", "", now); err != nil || second.Ref != "cb_2" {
		t.Fatalf("next: %+v %v", second, err)
	}
	time.Sleep(cfg.CallbackLease + 100*time.Millisecond) // both leases run out on the Redis clock
	if _, err := st.Finish(ctx, "cb_2", 1, fallback.StatusCompleted, "in time? no", time.Now()); err != nil {
		t.Fatalf("finish after the lease but before any sweep: %v", err) // no one took it yet
	}
	again, err := st.Next(ctx, "op2", "", time.Now()) // sweeps: cb_1 back first
	if err != nil || again.Ref != "cb_1" || again.Attempt != 2 {
		t.Fatalf("after the lease ran out: %+v %v", again, err)
	}
	if _, err := st.Finish(ctx, "cb_1", 1, fallback.StatusCompleted, "late", time.Now()); !errors.Is(err, fallback.ErrLeaseLost) {
		t.Fatalf("the old attempt: %v", err)
	}
	// cb_3 expires once the sweep runs past its max wait, not before.
	if err := st.Sweep(ctx, now.Add(cfg.CallbackMaxWait)); err != nil {
		t.Fatal(err)
	}
	if c, _ := st.Get(ctx, "cb_3"); c.Status != fallback.StatusPending {
		t.Fatalf("cb_3 at its max wait: %s", c.Status)
	}
	if err := st.Sweep(ctx, now.Add(cfg.CallbackMaxWait+time.Second)); err != nil {
		t.Fatal(err)
	}
	if c, _ := st.Get(ctx, "cb_3"); c.Status != fallback.StatusExpired {
		t.Fatalf("cb_3 past its max wait: %s", c.Status)
	}
	sn, err := st.Snapshot(ctx, time.Now())
	if err != nil || sn.Queued != 0 || sn.Leased != 1 || sn.Ledger.Expired != 1 || sn.Ledger.Lost != 1 || sn.Ledger.Check(sn.Queued, sn.Leased) != nil {
		t.Fatalf("snapshot %+v %v", sn, err)
	}
}

// An operator may claim any pending callback by ticket (the CallbackStore
// contract), not only the oldest: the ones it passes over in the stream
// keep their places for the next claims.
func TestCallbackClaimByTicketKeepsOrder(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", workerConfig())
	now := time.Now()
	for _, tk := range []string{"cb_1", "cb_2", "cb_3", "cb_4"} {
		if _, _, err := st.Accept(ctx, fallback.Callback{Ref: tk, Call: tk, Turn: "t", Number: "+15550100", Accepted: now}); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := st.Claim(ctx, "cb_3", "op", now, now.Add(time.Minute)); err != nil || c.Attempt != 1 {
		t.Fatalf("claim cb_3: %+v %v", c, err)
	}
	var got []string
	for range 3 {
		c, err := st.Next(ctx, "op", "", now)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Ref)
	}
	if strings.Join(got, ",") != "cb_1,cb_2,cb_4" {
		t.Fatalf("next after claiming cb_3: %v", got)
	}
	// Nothing waits: none waiting, though every slot is held (as in
	// process, and as stagestest.RunClaimGate asks of every claim gate).
	if _, err := st.Next(ctx, "op", "", now); !errors.Is(err, fallback.ErrNoneWaiting) {
		t.Fatalf("claim with nothing waiting: %v", err)
	}
	if _, _, err := st.Accept(ctx, fallback.Callback{Ref: "cb_5", Call: "cb_5", Turn: "t", Number: "+15550100", Accepted: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(ctx, "op", "", now); !errors.Is(err, fallback.ErrSlotsBusy) {
		t.Fatalf("fifth claim with 4 slots: %v", err)
	}
}

// TestCallbacksSurviveFlushAll: two replicas accept callbacks on one
// redis-server, one is completed, then the server loses everything
// (FLUSHALL). At each replica's next sweep every live callback it had
// accepted is listed again, pending under its ticket and with its
// number, and the completed one does not come back.
func TestCallbacksSurviveFlushAll(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a := redisqueue.NewCallbackStore(rdb, "callbacks", workerConfig())
	b := redisqueue.NewCallbackStore(srv.Client(t), "callbacks", workerConfig())
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	accepted := map[string]string{} // ticket -> number
	for i, st := range []*redisqueue.CallbackStore{a, b, a, b} {
		c := fallback.Callback{Ref: fmt.Sprintf("cb_%d", i), Call: fmt.Sprintf("c%d", i), Turn: "t1", Number: fmt.Sprintf("+1555010000%d", i), Accepted: at(i)}
		if _, created, err := st.Accept(ctx, c); err != nil || !created {
			t.Fatalf("accept %s: %v %v", c.Ref, created, err)
		}
		accepted[c.Ref] = c.Number
	}
	// Replica b's operator completes cb_0, accepted by a.
	done, err := b.Claim(ctx, "cb_0", "op", at(10), at(70))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(ctx, "cb_0", done.Attempt, fallback.StatusCompleted, "", at(11)); err != nil {
		t.Fatal(err)
	}
	delete(accepted, "cb_0")
	// a sweeps once before the loss: it learns cb_0 finished.
	if err := a.Sweep(ctx, at(12)); err != nil {
		t.Fatal(err)
	}

	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if l, err := a.List(ctx, 0); err != nil || len(l) != 0 {
		t.Fatalf("after FLUSHALL: %d listed, %v", len(l), err)
	}
	for _, st := range []*redisqueue.CallbackStore{a, b} {
		if err := st.Sweep(ctx, at(13)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := b.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range l {
		if c.Status != fallback.StatusPending {
			t.Errorf("%s put back %s, want pending", c.Ref, c.Status)
		}
		got[c.Ref] = c.Number
	}
	if fmt.Sprint(got) != fmt.Sprint(accepted) {
		t.Fatalf("listed after the sweeps: %v, want every live callback accepted before the loss %v", got, accepted)
	}
	if n := a.Republished() + b.Republished(); n != 3 {
		t.Fatalf("%d put back, want 3", n)
	}
	// A sweep with nothing lost puts nothing back.
	if err := a.Sweep(ctx, at(14)); err != nil || a.Republished()+b.Republished() != 3 {
		t.Fatalf("a sweep after the restore: %v, %d put back", err, a.Republished()+b.Republished())
	}
}
