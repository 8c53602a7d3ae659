package redisstage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// fleet is three replicas (three clients, three dispatchers) on one stage.
type fleet struct {
	d          []*redisstage.Dispatcher
	held, peak atomic.Int64
}

func newFleet(t *testing.T, srv *redistest.Server, l stages.Limits, opt redisstage.Options) *fleet {
	t.Helper()
	name := fmt.Sprint("fleet", stageSeq.Add(1))
	f := &fleet{}
	for range 3 {
		s, err := redisstage.New(srv.Client(t), name, l, opt)
		if err != nil {
			t.Fatal(err)
		}
		d := redisstage.NewDispatcher(s, redisstage.DispatcherOptions{Poll: 20 * time.Millisecond})
		t.Cleanup(d.Stop)
		f.d = append(f.d, d)
	}
	return f
}

// work submits one job through replica r and, if admitted, holds the slot
// briefly. It returns the disposition and the Submit error.
func (f *fleet) work(ctx context.Context, r int, owner, id string) (stages.Disposition, error) {
	d := f.d[r]
	p, disp, err := d.SubmitTicket(ctx, stages.Job{ID: id, Owner: owner, Generation: 1, Born: time.Now()})
	if err != nil || disp != stages.Queued {
		return disp, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	res, err := p.Wait(wctx)
	cancel()
	if err != nil || res != stages.Admitted {
		return res, err
	}
	n := f.held.Add(1)
	for m := f.peak.Load(); n > m && !f.peak.CompareAndSwap(m, n); m = f.peak.Load() {
	}
	select {
	case <-time.After(2 * time.Millisecond):
	case <-p.Lost():
	}
	f.held.Add(-1)
	_, err = d.Release(ctx, id)
	return stages.Admitted, err
}

// Three replicas under concurrent load never hold more than the fleet's
// slots, and the fleet-wide ledger balances.
func TestFleetNeverOverAdmits(t *testing.T) {
	srv := redistest.Start(t)
	const slots = 3
	f := newFleet(t, srv, stages.Limits{Slots: slots, Waiting: 6, MaxAge: 2 * time.Second}, redisstage.Options{LeaseTTL: time.Second, Warmup: -1})
	ctx := context.Background()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	errs := make(chan error, 24)
	for w := range 24 {
		r, owner := w%3, fmt.Sprint("call", w)
		if err := f.d[(w+1)%3].Rotate(ctx, owner, 1); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				d, err := f.work(ctx, r, owner, fmt.Sprint(owner, "-", i))
				if err != nil {
					errs <- err
					return
				}
				if d == stages.Admitted {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := f.peak.Load(); p > slots {
		t.Fatalf("fleet held %d leases at once, slots %d", p, slots)
	}
	if admitted.Load() == 0 {
		t.Fatal("nothing was admitted")
	}
	fs, err := f.d[0].Store().FleetSnapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	if fs.Leased != 0 || fs.Ledger.Admitted != uint64(admitted.Load()) {
		t.Fatalf("snapshot %+v, admitted %d", fs, admitted.Load())
	}
	t.Logf("admitted %d, refused %+v", admitted.Load(), fs.Ledger.Refused)
}

// A barge-in handled by one replica cancels the call's work queued through
// another, and the active work's holder learns it lost its right to speak.
func TestFleetRotateCancelsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	f := newFleet(t, srv, stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}, redisstage.Options{LeaseTTL: time.Second, Warmup: -1})
	ctx := context.Background()
	a, b := f.d[0], f.d[1]
	if err := a.Rotate(ctx, "call", 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	active, _, err := a.SubmitTicket(ctx, stages.Job{ID: "speak", Owner: "call", Generation: 1, Born: now})
	if err != nil {
		t.Fatal(err)
	}
	queued, _, err := a.SubmitTicket(ctx, stages.Job{ID: "next", Owner: "call", Generation: 1, Born: now})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := active.Result(); r != stages.Admitted {
		t.Fatalf("first job %v", r)
	}
	if err := b.Rotate(ctx, "call", 2); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if r, err := queued.Wait(wctx); err != nil || r != stages.Cancelled {
		t.Fatalf("queued work on the other replica: %v, %v", r, err)
	}
	select {
	case <-active.Cancelled():
	case <-wctx.Done():
		t.Fatal("active holder never learnt of the cancellation")
	}
	if d, err := a.Release(ctx, "speak"); err != nil || d != stages.Cancelled {
		t.Fatalf("Release = %v, %v", d, err)
	}
	if _, err := b.Release(ctx, "speak"); !errors.Is(err, admit.ErrNoLease) {
		t.Fatalf("release through a replica not holding the lease: %v", err)
	}
}

// Redis restarted mid-load: while it is down admission fails closed (Closed
// and admit.ErrUnavailable, Ready reports it); once it is back the fleet
// admits again, never above its slots.
func TestFleetRedisRestartFailsClosedThenRecovers(t *testing.T) {
	srv := redistest.StartPersistent(t)
	const slots = 2
	f := newFleet(t, srv, stages.Limits{Slots: slots, Waiting: 4, MaxAge: 2 * time.Second}, redisstage.Options{LeaseTTL: 600 * time.Millisecond, Warmup: -1})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var closedSeen, afterRestart atomic.Int64
	var restarted atomic.Bool
	var wg sync.WaitGroup
	for w := range 6 {
		owner := fmt.Sprint("call", w)
		if err := f.d[0].Rotate(ctx, owner, 1); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				d, err := f.work(ctx, w%3, owner, fmt.Sprint(owner, "-", i))
				switch {
				case errors.Is(err, admit.ErrUnavailable):
					if d != stages.Closed && d != stages.Admitted && d != 0 {
						t.Errorf("unavailable store answered %v", d)
					}
					if d == stages.Closed {
						closedSeen.Add(1)
					}
					time.Sleep(5 * time.Millisecond)
				case errors.Is(err, stages.ErrFenced), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				case err != nil:
					t.Errorf("work: %v", err)
					return
				case d == stages.Admitted && restarted.Load():
					afterRestart.Add(1)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	srv.Stop()
	// Down until a submission has failed closed (a client still redialing
	// may take a while on a busy machine to give up), 5 s at most.
	down := time.Now().Add(5 * time.Second)
	for closedSeen.Load() == 0 && time.Now().Before(down) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.d[1].Ready(ctx); !errors.Is(err, admit.ErrUnavailable) {
		t.Errorf("Ready while Redis is down: %v", err)
	}
	srv.Restart()
	restarted.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for afterRestart.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if closedSeen.Load() == 0 {
		t.Error("no submission failed closed while Redis was down")
	}
	if afterRestart.Load() < 10 {
		t.Errorf("only %d admissions after the restart", afterRestart.Load())
	}
	if p := f.peak.Load(); p > slots {
		t.Fatalf("fleet held %d leases at once, slots %d", p, slots)
	}
	if err := f.d[2].Ready(context.Background()); err != nil {
		t.Errorf("Ready after recovery: %v", err)
	}
}

// Redis restarted without persistence loses every lease: the stage stays
// closed for a warm-up of one TTL so that leases granted before have run
// out, fencing tokens keep growing, and the old holder is fenced.
func TestDataLossWarmsUpClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	s, err := redisstage.New(srv.Client(t), fmt.Sprint("loss", stageSeq.Add(1)), stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Minute}, redisstage.Options{LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	offerTake := func(id string) (stages.Disposition, redisstage.Lease) {
		t.Helper()
		now := time.Now()
		if err := s.Rotate(ctx, id, 1, now); err != nil {
			t.Fatal(err)
		}
		d, err := s.Offer(ctx, stages.Job{ID: id, Owner: id, Generation: 1, Born: now}, now)
		if err != nil || d != stages.Queued {
			return d, redisstage.Lease{}
		}
		_, l, err := s.TakeLease(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		return d, l
	}
	if d, _ := offerTake("first"); d != stages.Closed {
		t.Fatalf("offer on a stage never warmed up = %v, want closed", d)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	_, old := offerTake("before")
	if old.Token == 0 {
		t.Fatal("no lease before the restart")
	}
	srv.Stop()
	if _, err := s.Offer(ctx, stages.Job{ID: "down", Owner: "down", Generation: 1, Born: time.Now()}, time.Now()); !errors.Is(err, admit.ErrUnavailable) {
		t.Fatalf("offer while down: %v", err)
	}
	srv.Restart()
	if err := s.Ready(ctx); !errors.Is(err, admit.ErrUnavailable) {
		t.Fatalf("Ready right after data loss: %v", err)
	}
	if d, _ := offerTake("during"); d != stages.Closed {
		t.Fatalf("offer during warm-up = %v", d)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	d, fresh := offerTake("after")
	if d != stages.Queued || fresh.Token <= old.Token {
		t.Fatalf("after warm-up: %v, token %d (old %d)", d, fresh.Token, old.Token)
	}
	if _, err := s.ReleaseLease(ctx, old); !errors.Is(err, stages.ErrFenced) {
		t.Fatalf("release of a lease lost with the data: %v", err)
	}
}
