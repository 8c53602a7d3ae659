package admission

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const cleanup = 2 * time.Second

// rig is one stage on an in-process gate with one slot, on a manual clock.
type rig struct {
	t   *testing.T
	clk *clock.Manual
	st  *Stage
	m   Metrics
}

func newRig(t *testing.T, quarantineAfter int) *rig {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	g, err := stages.NewGate(stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Metrics{
		Overdue:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o"}, []string{"stage"}),
		QuarantineRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"stage"}),
		RotateErrors:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e"}, []string{"stage"}),
		Quarantined:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "q"}, []string{"stage"}),
	}
	st := New(g, Config{Name: "model", Slot: 2, Cleanup: cleanup, Op: time.Second, Clock: clk,
		QuarantineAfter: quarantineAfter, Metrics: m})
	t.Cleanup(st.Stop)
	return &rig{t: t, clk: clk, st: st, m: m}
}

// admit submits a job of owner "call" at generation 1 and waits for its
// lease.
func (r *rig) admit(id string) stages.Pending {
	r.t.Helper()
	ctx := context.Background()
	var rot Rotation
	if err := r.st.Rotate(ctx, &rot, "call", 1); err != nil {
		r.t.Fatal(err)
	}
	p, d, err := r.st.Submit(ctx, stages.Job{ID: id, Owner: "call", Generation: 1, Born: r.clk.Now()})
	if err != nil || d != stages.Queued {
		r.t.Fatalf("submit %s: %v %v", id, d, err)
	}
	if d, err := p.Wait(ctx); err != nil || d != stages.Admitted {
		r.t.Fatalf("%s: %v %v, want admitted", id, d, err)
	}
	return p
}

func (r *rig) snapshot() stages.Snapshot {
	r.t.Helper()
	sn, err := r.st.Snapshot(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		r.t.Fatalf("ledger: %v", err)
	}
	return sn
}

// holding runs Hold in a goroutine with work that holds the lease until
// release is closed, returning the work's error then.
func (r *rig) holding(ctx context.Context, l Lease, workErr error) (release chan struct{}, started chan context.Context, done chan error) {
	release, started, done = make(chan struct{}), make(chan context.Context, 1), make(chan error, 1)
	go func() {
		_, err := r.st.Hold(ctx, l, func(ctx context.Context) error {
			started <- ctx
			<-release
			return workErr
		})
		done <- err
	}()
	return release, started, done
}

// A lease is held while its work runs and released only after the work
// returned: completed, or failed when the work failed.
func TestHoldReleasesAfterWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		ledger  func(stages.Ledger) uint64
		wantErr bool
	}{
		{"completed", nil, func(l stages.Ledger) uint64 { return l.Completed }, false},
		{"failed", errors.New("backend down"), func(l stages.Ledger) uint64 { return l.Failed }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 0)
			r.admit("j1")
			release, started, done := r.holding(context.Background(), Lease{ID: "j1"}, tc.err)
			<-started
			if sn := r.snapshot(); sn.Leased != 1 {
				t.Fatalf("leased %d while the work runs, want 1", sn.Leased)
			}
			close(release)
			if err := <-done; (err != nil) != tc.wantErr {
				t.Fatalf("Hold: %v", err)
			}
			sn := r.snapshot()
			if sn.Leased != 0 || tc.ledger(sn.Ledger) != 1 {
				t.Fatalf("after the work: leased %d, ledger %+v", sn.Leased, sn.Ledger)
			}
		})
	}
}

// A cancelled lease whose work does not return within the cleanup timeout
// is reported overdue and stays held; the work's return confirms it and
// releases the lease. With QuarantineAfter 1 the stage is quarantined
// meanwhile: new work is refused closed and counted, and it reopens on the
// confirmation. (In a synctest bubble: the cancellation's watch starts on
// a goroutine of its own, which synctest.Wait waits for.)
func TestHoldOverdueQuarantines(t *testing.T) { synctest.Test(t, testHoldOverdueQuarantines) }

func testHoldOverdueQuarantines(t *testing.T) {
	r := newRig(t, 1)
	r.admit("j1")
	ctx, cancel := context.WithCancel(context.Background())
	release, started, done := r.holding(ctx, Lease{ID: "j1"}, nil)
	<-started
	cancel()
	synctest.Wait()
	r.clk.Advance(cleanup - time.Millisecond)
	if r.st.Overdue() != 0 {
		t.Fatal("overdue before the cleanup timeout")
	}
	r.clk.Advance(time.Millisecond)
	if r.st.Overdue() != 1 || testutil.ToFloat64(r.m.Overdue.WithLabelValues("model")) != 1 {
		t.Fatalf("overdue %d at the cleanup timeout, want 1", r.st.Overdue())
	}
	if sn := r.snapshot(); sn.Leased != 1 {
		t.Fatalf("an overdue lease was given back: leased %d", sn.Leased)
	}
	if !r.st.Quarantined() || testutil.ToFloat64(r.m.Quarantined.WithLabelValues("model")) != 1 {
		t.Fatal("not quarantined after one overdue cleanup")
	}
	if err := Quarantined([]*Stage{r.st}); err == nil || err.Error() != "backend quarantined: model" {
		t.Fatalf("Quarantined = %v, want the model stage named (for /readyz)", err)
	}
	if _, d, err := r.st.Submit(context.Background(), stages.Job{ID: "j2", Owner: "call", Generation: 1, Born: r.clk.Now()}); d != stages.Closed || err != nil {
		t.Fatalf("submit while quarantined: %v %v, want closed", d, err)
	}
	if testutil.ToFloat64(r.m.QuarantineRefused.WithLabelValues("model")) != 1 {
		t.Fatal("the quarantine's refusal was not counted")
	}

	close(release)
	<-done
	if r.st.Overdue() != 0 || r.st.Quarantined() {
		t.Fatalf("after the work returned: overdue %d, quarantined %v", r.st.Overdue(), r.st.Quarantined())
	}
	if sn := r.snapshot(); sn.Leased != 0 || sn.Ledger.ReleasedCancelled+sn.Ledger.Completed != 1 {
		t.Fatalf("after the work returned: leased %d, ledger %+v", sn.Leased, sn.Ledger)
	}
	if r.clk.Pending() != 0 {
		t.Fatalf("%d timers left", r.clk.Pending())
	}
}

// A cleanup confirmed within the timeout reports nothing overdue and stops
// its timer.
func TestHoldCancelledOnTime(t *testing.T) { synctest.Test(t, testHoldCancelledOnTime) }

func testHoldCancelledOnTime(t *testing.T) {
	r := newRig(t, 1)
	r.admit("j1")
	ctx, cancel := context.WithCancel(context.Background())
	release, started, done := r.holding(ctx, Lease{ID: "j1"}, context.Canceled)
	<-started
	cancel()
	synctest.Wait()
	close(release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Hold: %v", err)
	}
	r.clk.Advance(cleanup)
	if r.st.Overdue() != 0 || r.st.Quarantined() || r.clk.Pending() != 0 {
		t.Fatalf("overdue %d, quarantined %v, timers %d", r.st.Overdue(), r.st.Quarantined(), r.clk.Pending())
	}
	if sn := r.snapshot(); sn.Leased != 0 || sn.Ledger.Failed != 0 {
		t.Fatalf("a stopped work counted failed or kept its lease: %+v", sn)
	}
}

// A lost lease stops the work: OnLost runs before its context ends with
// the cause ErrLeaseLost, and the error is the store's "unavailable" unless
// the owner itself was stopped.
func TestHoldLeaseLost(t *testing.T) {
	for _, ownerStopped := range []bool{false, true} {
		r := newRig(t, 0)
		r.admit("j1")
		lost := make(chan struct{})
		var silenced atomic.Bool
		owner, stopOwner := context.WithCancel(context.Background())
		var disp stages.Disposition
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			disp, err = r.st.Hold(owner, Lease{ID: "j1", Lost: lost, Owner: owner, OnLost: func() {
				silenced.Store(true)
				if ownerStopped {
					stopOwner()
				}
			}}, func(ctx context.Context) error {
				<-ctx.Done()
				if !silenced.Load() {
					t.Error("the work's context ended before OnLost ran")
				}
				if !ownerStopped && !errors.Is(context.Cause(ctx), ErrLeaseLost) {
					t.Errorf("cause %v, want ErrLeaseLost", context.Cause(ctx))
				}
				return ctx.Err()
			})
		}()
		close(lost)
		<-done
		stopOwner()
		var be *backend.Error
		switch {
		case ownerStopped && err != nil && errors.As(err, &be):
			t.Fatalf("owner stopped: %v, want the work's own error", err)
		case !ownerStopped && (!errors.As(err, &be) || be.Kind != backend.KindUnavailable || !errors.Is(err, ErrLeaseLost)):
			t.Fatalf("lease lost: %v, want unavailable wrapping ErrLeaseLost", err)
		}
		if disp == 0 {
			t.Fatal("disposition 0")
		}
		r.snapshot() // the ledger balances
	}
}

// countingGate counts the rotations that reach the gate.
type countingGate struct {
	stages.Gate
	rotations atomic.Int32
	err       error
}

func (g *countingGate) Rotate(ctx context.Context, owner string, gen uint64) error {
	g.rotations.Add(1)
	if g.err != nil {
		return g.err
	}
	return g.Gate.Rotate(ctx, owner, gen)
}

// A rotation already confirmed costs no round trip; a store that says the
// owner is past the generation has done it; any other error is counted
// and tried again next time.
func TestRotate(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	g, err := stages.NewGate(stages.Limits{Slots: 1, Waiting: 1}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	cg := &countingGate{Gate: g}
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e"}, []string{"stage"})
	st := New(cg, Config{Name: "recognize", Op: time.Second, Clock: clk, Metrics: Metrics{RotateErrors: errs}})
	defer st.Stop()
	ctx := context.Background()
	var r, other Rotation
	for range 2 {
		if err := st.Rotate(ctx, &r, "call", 2); err != nil {
			t.Fatal(err)
		}
	}
	if n := cg.rotations.Load(); n != 1 {
		t.Fatalf("%d rotations reached the gate, want 1", n)
	}
	if err := st.Rotate(ctx, &other, "call", 1); err != nil { // ErrGeneration: already past
		t.Fatalf("a rotation the owner is past: %v", err)
	}
	cg.err = stages.ErrUnavailable
	if err := st.Rotate(ctx, &r, "call", 3); !errors.Is(err, stages.ErrUnavailable) {
		t.Fatalf("store down: %v", err)
	}
	cg.err = nil
	if err := st.Rotate(ctx, &r, "call", 3); err != nil {
		t.Fatal(err)
	}
	if n, e := cg.rotations.Load(), testutil.ToFloat64(errs.WithLabelValues("recognize")); n != 4 || e != 1 {
		t.Fatalf("%d rotations, %v errors; want 4, 1", n, e)
	}
}

// A drained stage refuses new work closed; its ledger still balances.
func TestDrain(t *testing.T) {
	r := newRig(t, 0)
	r.st.Drain()
	if _, d, err := r.st.Submit(context.Background(), stages.Job{ID: "j", Owner: "call", Generation: 1, Born: r.clk.Now()}); d != stages.Closed || err != nil {
		t.Fatalf("submit while draining: %v %v", d, err)
	}
	if sn := r.snapshot(); !sn.Closed || sn.Ledger.Offered != 1 {
		t.Fatalf("snapshot %+v", sn)
	}
}

// brokenView fails its snapshots after the first.
type brokenView struct {
	stages.View
	calls atomic.Int32
}

func (v *brokenView) Snapshot(ctx context.Context) (stages.Snapshot, error) {
	if v.calls.Add(1) > 1 {
		return stages.Snapshot{}, stages.ErrUnavailable
	}
	return stages.Snapshot{Queued: 3}, nil
}

// A view that cannot be read shows its last inventory, closed.
func TestSnapshotShowsLastClosed(t *testing.T) {
	st := NewView(&brokenView{}, Config{Name: "callback", Slot: -1})
	defer st.Stop() // a view has no gate to stop
	if sn, err := st.Snapshot(context.Background()); err != nil || sn.Queued != 3 || sn.Closed {
		t.Fatalf("first: %+v %v", sn, err)
	}
	sn, err := st.Snapshot(context.Background())
	if !errors.Is(err, stages.ErrUnavailable) || sn.Queued != 3 || !sn.Closed {
		t.Fatalf("unreadable: %+v %v, want the last inventory, closed", sn, err)
	}
	if st.Gate() != nil {
		t.Fatal("a view has a gate")
	}
}
