package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/frontdoorhq/frontdoor/session/internal/metrics"
	"github.com/frontdoorhq/frontdoor/session/internal/quarantine"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Stage names as they appear in the protocol, metrics and /v1/stages.
const (
	StageSession   = "session"
	StageRecognize = "recognize"
	StageModel     = "model"
	StageSynthesis = "synthesis"
)

// stage is one named admission stage of the server: the gate its work is
// submitted to, the view /v1/stages reads, and the bookkeeping a gate does
// not keep: which cancelled leases are overdue, quarantine and drain.
type stage struct {
	name    string
	idx     int         // the call's rotation slot (Call.rotated); -1 for shown-only stages
	gate    stages.Gate // nil for a stage shown only (AddView)
	view    stages.View
	timeout time.Duration // cleanup timeout
	op      time.Duration // bound of one gate operation (Config.StoreTimeout)
	clock   clock.Clock
	log     *slog.Logger
	m       *metrics.Metrics

	overdue  atomic.Int64 // leases cancelled longer than timeout ago, still held
	draining atomic.Bool  // closed on this replica (Drain)
	q        quarantine.Q // quarantine.go

	mu   sync.Mutex
	last stages.Snapshot // shown while the view cannot be read
}

// newStage wraps g, the stage's gate as Config.NewGate built it, in the
// server's decorators: closed on this replica while it drains or while its
// backend is quarantined (stages.Guard, counted in its ledger).
func (s *Engine) newStage(name string, idx int, g stages.Gate) *stage {
	st := &stage{name: name, idx: idx, timeout: s.cfg.CleanupTimeout, op: s.cfg.StoreTimeout, clock: s.cfg.Clock, log: s.log, m: s.m}
	st.q = quarantine.Q{Stage: name, Timeout: st.timeout, Clock: st.clock, Log: st.log, Gauge: s.m.Quarantined, Overdue: &st.overdue}
	st.gate = stages.Guard(g, func() bool { return st.draining.Load() || st.q.On() })
	st.view = st.gate
	return st
}

// submit offers job to the stage. A quarantined stage's refusal is counted.
func (s *stage) submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	ctx, cancel := context.WithTimeout(ctx, s.op)
	defer cancel()
	p, d, err := s.gate.Submit(ctx, job)
	if d == stages.Closed && err == nil && s.q.On() {
		s.m.QuarantineRefused.WithLabelValues(s.name).Inc()
	}
	return p, d, err
}

// opCtx bounds one operation on the stage's gate by the store timeout.
// Store deadlines are context deadlines, which a Redis client turns into
// socket deadlines: they stay on the wall clock (a manual clock does not
// reach the socket), as every store round trip's here does.
func (s *stage) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.op)
}

// cleanupCtx bounds an operation that must reach the store even though the
// call or turn it belongs to has ended (Release, Forget, Cancel); one that
// cannot is left to the store's lease TTL.
func (s *stage) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.op)
}

// release returns id's lease.
func (s *stage) release(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Release(ctx, id)
}

// releaseFailed returns id's lease after its backend failed: the ledger
// counts it failed, not completed (stages.Gate.ReleaseFailed).
func (s *stage) releaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.ReleaseFailed(ctx, id)
}

// forget ends owner's conversation in the stage.
func (s *stage) forget(ctx context.Context, owner string) error {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Forget(ctx, owner)
}

// cancel withdraws id.
func (s *stage) cancel(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Cancel(ctx, id)
}

// rotate advances owner to generation in the stage.
func (s *stage) rotate(ctx context.Context, owner string, generation uint64) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	return s.gate.Rotate(ctx, owner, generation)
}

// snapshot reads the stage's view. While it cannot be read (a fleet store
// that does not answer), the last inventory seen is shown, closed, as
// admission is, with the reason.
func (s *stage) snapshot(ctx context.Context) (stages.Snapshot, error) {
	sn, err := s.view.Snapshot(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		sn = s.last
		sn.Closed = true
		return sn, err
	}
	s.last = sn
	return sn, nil
}

// hold runs work under the lease of job id and releases the lease only
// after work has returned: that return is the release evidence. If ctx is
// cancelled and work has not returned within the cleanup timeout, the lease
// is reported overdue (metric, /v1/stages, a warning) and stays held.
func (s *stage) hold(ctx context.Context, id string, work func(context.Context) error) (stages.Disposition, error) {
	w := &watch{s: s, id: id}
	stop := context.AfterFunc(ctx, w.cancelled)
	since := s.clock.Now()
	err := work(ctx)
	stop()
	w.returned()
	s.observeHeld(ctx, since, err) // adaptive.go
	release := s.release
	if err != nil && ctx.Err() == nil { // failed, not stopped by a cancel
		release = s.releaseFailed
	}
	d, rerr := release(ctx, id)
	if errors.Is(rerr, stages.ErrFenced) { // the lease ran out while the work ran: nothing left to release
		s.log.Warn("release refused: lease lost", "stage", s.name, "job", id)
	} else if rerr != nil {
		s.log.Error("release", "stage", s.name, "job", id, "err", rerr)
	}
	return d, err
}

// watch times one lease's cleanup after cancellation.
type watch struct {
	s  *stage
	id string

	mu       sync.Mutex
	at       time.Time
	timer    clock.Timer
	late     bool
	finished bool
}

func (w *watch) cancelled() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.at = w.s.clock.Now()
	w.timer = w.s.clock.AfterFunc(w.s.timeout, w.expire)
}

func (w *watch) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.late = true
	w.s.overdue.Add(1)
	w.s.m.OverdueTotal.WithLabelValues(w.s.name).Inc()
	w.s.log.Warn("cleanup overdue: lease still held", "stage", w.s.name, "job", w.id,
		"cancelled_ago", clock.Since(w.s.clock, w.at).Round(time.Millisecond), "cleanup_timeout", w.s.timeout)
	w.s.q.Late()
}

func (w *watch) returned() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.late {
		w.s.overdue.Add(-1)
		w.s.log.Warn("overdue cleanup confirmed: lease released", "stage", w.s.name, "job", w.id,
			"cleanup", clock.Since(w.s.clock, w.at).Round(time.Millisecond))
		w.s.q.Confirmed()
	} else if !w.at.IsZero() {
		w.s.q.OnTime()
	}
}

// AddView shows a stage whose work is admitted elsewhere (the fallback
// callback and handoff queues: their own controllers in process, their
// snapshots from Redis in fleet mode) in /v1/stages and /metrics. A drain
// leaves it open: callers refused while the server drains may still book a
// durable callback; its owner closes it.
func (s *Engine) AddView(name string, v stages.View) {
	st := &stage{name: name, idx: -1, view: v, timeout: s.cfg.CleanupTimeout, clock: s.cfg.Clock, log: s.log, m: s.m}
	s.mu.Lock()
	s.extra = append(s.extra, st)
	s.mu.Unlock()
}

// LocalGate returns the in-process gate of one stage (stages.NewGate):
// limits l (the frontdoor policy, unless opts choose a baseline with
// stages.WithPolicy), its time owned on clk. An error of its take goes to
// log; its count is in the stage's snapshot (TakeErrors) and in /metrics.
func LocalGate(l stages.Limits, clk clock.Clock, log *slog.Logger, opts ...stages.Option) (stages.Gate, error) {
	g, err := stages.NewGate(l, clk, log, opts...)
	if err != nil {
		return nil, err
	}
	return g, nil
}
