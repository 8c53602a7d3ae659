// Package admission is the call engine's client of its admission stages:
// one Stage wraps one stages.Gate in what the server adds to the contract
// (closed while this replica drains or while the stage's backend is
// quarantined), bounds each operation on it by the store timeout, and runs
// work under a lease (Hold) that is released only once the work has
// returned, watching, on the engine's clock, a cancelled lease whose work
// does not return in time.
//
// It knows nothing of calls or turns: the engine hands it owners, job ids,
// contexts and work functions.
package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"

	"github.com/prometheus/client_golang/prometheus"
)

// Config describes one stage.
type Config struct {
	Name string
	// Slot is the stage's index in an owner's per-stage state (a call's
	// confirmed generations, Rotation); -1 for a stage shown only.
	Slot int
	// Cleanup is how long a cancelled lease's work may take to return
	// before the lease is reported overdue (it stays held).
	Cleanup time.Duration
	// Op bounds one operation on the gate (the store timeout).
	Op    time.Duration
	Clock clock.Clock // nil: clock.System
	Log   *slog.Logger
	// QuarantineAfter is how many cleanups overdue in a row quarantine the
	// stage (0: never).
	QuarantineAfter int
	// SignalAtEnd says the stage's latency signal (for an adaptive gate)
	// is its work's end, as a recognition's is; otherwise the work
	// signals from inside (FirstSignal).
	SignalAtEnd bool
	Metrics     Metrics
}

// Metrics are the stage's instruments, each labelled by stage name at its
// first use (a series appears once it counts). A nil one counts nowhere.
type Metrics struct {
	Overdue           *prometheus.CounterVec // leases gone overdue
	QuarantineRefused *prometheus.CounterVec // work refused while quarantined
	RotateErrors      *prometheus.CounterVec // rotations the store failed
	Quarantined       *prometheus.GaugeVec   // 1 while quarantined
}

func (m *Metrics) defaults() {
	for _, c := range []**prometheus.CounterVec{&m.Overdue, &m.QuarantineRefused, &m.RotateErrors} {
		if *c == nil {
			*c = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "unregistered"}, []string{"stage"})
		}
	}
	if m.Quarantined == nil {
		m.Quarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "unregistered"}, []string{"stage"})
	}
}

// Stage is one named admission stage of the server: the gate its work is
// submitted to, the view /v1/stages reads, and the bookkeeping a gate does
// not keep: which cancelled leases are overdue, quarantine and drain.
type Stage struct {
	cfg  Config
	gate stages.Gate // nil for a stage shown only (NewView)
	view stages.View

	overdue  atomic.Int64 // leases cancelled longer than Cleanup ago, still held
	draining atomic.Bool  // closed on this replica (Drain)
	q        quarantine

	mu   sync.Mutex
	last stages.Snapshot // shown while the view cannot be read
}

// New wraps g, the stage's gate, in the server's decorators: closed on
// this replica while it drains or while its backend is quarantined
// (stages.Guard, counted in its ledger).
func New(g stages.Gate, cfg Config) *Stage {
	s := newStage(cfg)
	s.gate = stages.Guard(g, func() bool { return s.draining.Load() || s.q.On() })
	s.view = s.gate
	return s
}

// NewView returns a stage whose work is admitted elsewhere, shown only: its
// gate is nil and a drain leaves it open.
func NewView(v stages.View, cfg Config) *Stage {
	s := newStage(cfg)
	s.view = v
	return s
}

func newStage(cfg Config) *Stage {
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Metrics.defaults()
	s := &Stage{cfg: cfg}
	s.q = quarantine{after: cfg.QuarantineAfter, stage: cfg.Name, timeout: cfg.Cleanup, clock: cfg.Clock, log: cfg.Log,
		gauge: cfg.Metrics.Quarantined, overdue: &s.overdue}
	return s
}

// Name is the stage's name.
func (s *Stage) Name() string { return s.cfg.Name }

// Slot is the stage's index in an owner's per-stage state (Config.Slot).
func (s *Stage) Slot() int { return s.cfg.Slot }

// Gate is the decorated gate the stage's work is submitted to (nil for a
// stage shown only).
func (s *Stage) Gate() stages.Gate { return s.gate }

// CleanupTimeout is Config.Cleanup.
func (s *Stage) CleanupTimeout() time.Duration { return s.cfg.Cleanup }

// Overdue is how many cancelled leases are held past the cleanup timeout.
func (s *Stage) Overdue() int64 { return s.overdue.Load() }

// Quarantined reports whether the stage's backend is quarantined.
func (s *Stage) Quarantined() bool { return s.q.On() }

// Drain closes the stage on this replica: new work is refused closed.
func (s *Stage) Drain() { s.draining.Store(true) }

// Stop closes the stage and stops its gate's timers (nothing for a stage
// shown only).
func (s *Stage) Stop() {
	if s.gate != nil {
		s.Drain()
		s.gate.Stop()
	}
}

// Submit offers job to the stage. A quarantined stage's refusal is counted.
func (s *Stage) Submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	p, d, err := s.gate.Submit(ctx, job)
	if d == stages.Closed && err == nil && s.q.On() {
		s.cfg.Metrics.QuarantineRefused.WithLabelValues(s.cfg.Name).Inc()
	}
	return p, d, err
}

// opCtx bounds one operation on the stage's gate by the store timeout.
// Store deadlines are context deadlines, which a Redis client turns into
// socket deadlines: they stay on the wall clock (a manual clock does not
// reach the socket), as every store round trip's here does.
func (s *Stage) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.Op)
}

// cleanupCtx bounds an operation that must reach the store even though the
// call or turn it belongs to has ended (Release, Forget, Cancel); one that
// cannot is left to the store's lease TTL.
func (s *Stage) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Op)
}

// Release returns id's lease.
func (s *Stage) Release(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Release(ctx, id)
}

// releaseFailed returns id's lease after its backend failed: the ledger
// counts it failed, not completed (stages.Gate.ReleaseFailed).
func (s *Stage) releaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.ReleaseFailed(ctx, id)
}

// Forget ends owner's conversation in the stage.
func (s *Stage) Forget(ctx context.Context, owner string) error {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Forget(ctx, owner)
}

// Cancel withdraws id.
func (s *Stage) Cancel(ctx context.Context, id string) (stages.Disposition, error) {
	ctx, cancel := s.cleanupCtx(ctx)
	defer cancel()
	return s.gate.Cancel(ctx, id)
}

// Rotation is the generation one owner's rotations in one stage have been
// confirmed at, so that a rotation already done costs no round trip.
type Rotation struct{ gen atomic.Uint64 }

// Rotate brings owner to generation gen in the stage, unless r says it is
// there already. A store that answers that the owner is already at or past
// gen (stages.ErrGeneration: another rotation got there first) has done
// what was asked. Any other error leaves r behind, so that the next
// rotation tries again.
func (s *Stage) Rotate(ctx context.Context, r *Rotation, owner string, gen uint64) error {
	if r.gen.Load() >= gen {
		return nil
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	if err := s.gate.Rotate(ctx, owner, gen); err != nil && !errors.Is(err, stages.ErrGeneration) {
		s.cfg.Metrics.RotateErrors.WithLabelValues(s.cfg.Name).Inc()
		return err
	}
	for {
		cur := r.gen.Load()
		if cur >= gen || r.gen.CompareAndSwap(cur, gen) {
			return nil
		}
	}
}

// Snapshot reads the stage's view. While it cannot be read (a fleet store
// that does not answer), the last inventory seen is shown, closed, as
// admission is, with the reason.
func (s *Stage) Snapshot(ctx context.Context) (stages.Snapshot, error) {
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

// Waiting lists the stage's waiting work.
func (s *Stage) Waiting(ctx context.Context) ([]stages.Waiter, error) {
	return s.view.Waiting(ctx)
}

// latencyObserver is a gate with an adaptive limit (stages/adaptive.New's).
type latencyObserver interface {
	Observe(latency time.Duration, overloaded bool)
}

// observe feeds the stage's gate, when it is an observer (an adaptive
// limit), one latency of the stage's useful signal measured from the
// lease, or an overload error (backend.ErrOverloaded: a 429 or 503). A
// gate with a fixed limit is not an observer, and nothing is measured.
func (s *Stage) observe(latency time.Duration, overloaded bool) {
	if o, ok := s.gate.(latencyObserver); ok {
		o.Observe(latency, overloaded)
	}
}

// observeHeld feeds what a lease's whole hold says: an overload error on
// any stage, and, for a stage whose signal is its work's end
// (Config.SignalAtEnd), the work's time.
func (s *Stage) observeHeld(ctx context.Context, since time.Time, err error) {
	switch {
	case errors.Is(err, backend.ErrOverloaded):
		s.observe(0, true)
	case err == nil && ctx.Err() == nil && s.cfg.SignalAtEnd:
		s.observe(s.cfg.Clock.Now().Sub(since), false)
	}
}

// FirstSignal returns a function that, called at each piece of a backend's
// output (the model's tokens, a sentence's audio), feeds the stage the
// latency from now (the lease) to the first piece, once.
func (s *Stage) FirstSignal() func() {
	start, seen := s.cfg.Clock.Now(), false
	return func() {
		if !seen {
			seen = true
			s.observe(s.cfg.Clock.Now().Sub(start), false)
		}
	}
}
