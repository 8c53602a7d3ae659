package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Prober is a backend with a cheap health check: for an HTTP backend a
// request that reaches its server without running a model, for a local
// engine that its binary is there and runs. Probe reports nil when the
// backend can take work.
type Prober interface {
	Probe(ctx context.Context) error
}

// HealthConfig configures a Health.
type HealthConfig struct {
	// Interval is how often each backend is probed (0: 5s).
	Interval time.Duration
	// Timeout bounds one probe (0: 2s, and never more than Interval).
	Timeout time.Duration
	// FailuresInARow is how many turns in a row a backend may fail
	// before it counts as not ready until its next good probe or turn
	// (0: turn failures alone never make it unready).
	FailuresInARow int
	// Logger (nil: discard) is told when a backend turns unready or ready.
	Logger *slog.Logger
	// Clock times the probes and their timeout (nil: SystemClock).
	Clock Clock
}

// Health is the readiness of the backends a turn passes (for /readyz): a
// backend is not ready while its last probe failed, or while its last
// FailuresInARow turns failed. Both recover by themselves: the next good
// probe (every Interval) or the next good turn makes it ready again. A
// backend watched without a probe (a stub) is ready unless its turns keep
// failing.
type Health struct {
	cfg HealthConfig
	log *slog.Logger

	mu    sync.Mutex
	order []string
	b     map[string]*watched
}

// errProbeTimeout is the cause set on a probe's context at its timeout.
var errProbeTimeout = errors.New("probe timeout")

type watched struct {
	probe  func(context.Context) error
	probed error // the last probe's failure; nil: it passed (or none ran)
	streak int   // turns failed in a row
	last   error // the last turn's failure
	down   bool  // as last logged
}

// NewHealth returns a Health with nothing watched yet.
func NewHealth(cfg HealthConfig) *Health {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	cfg.Timeout = min(cfg.Timeout, cfg.Interval)
	cfg.Clock = ClockOr(cfg.Clock)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{cfg: cfg, log: log, b: map[string]*watched{}}
}

// Watch adds the backend of stage name ("model", "synthesis",
// "recognize"), with its probe (nil: none, as for a stub). Call it
// before Run.
func (h *Health) Watch(name string, probe func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.b[name]; !ok {
		h.order = append(h.order, name)
	}
	h.b[name] = &watched{probe: probe}
}

// Observe records a turn's outcome at the backend of stage name: err nil
// for work it finished, its error for work it failed (not for work that
// was cancelled).
func (h *Health) Observe(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.b[name]
	if w == nil {
		return
	}
	if err == nil {
		w.streak, w.last = 0, nil
	} else {
		w.streak++
		w.last = err
	}
	h.noteLocked(name, w)
}

// Probe probes every watched backend once, at the same time, each within
// the probe timeout, and returns when all have answered.
func (h *Health) Probe(ctx context.Context) {
	h.mu.Lock()
	names := append([]string(nil), h.order...)
	probes := make([]func(context.Context) error, len(names))
	for i, n := range names {
		probes[i] = h.b[n].probe
	}
	h.mu.Unlock()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, p := range probes {
		if p == nil {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithCancelCause(ctx)
			t := h.cfg.Clock.AfterFunc(h.cfg.Timeout, func() { cancel(errProbeTimeout) })
			defer cancel(nil)
			defer t.Stop()
			errs[i] = p(pctx)
			if errs[i] != nil && context.Cause(pctx) == errProbeTimeout && ctx.Err() == nil {
				errs[i] = fmt.Errorf("no answer within %s: %w", h.cfg.Timeout, errs[i])
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // shutting down: what was probed is not news
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, n := range names {
		w := h.b[n]
		if w == nil || probes[i] == nil {
			continue
		}
		w.probed = errs[i]
		if errs[i] == nil {
			// The backend answers: a run of failed turns is taken as
			// over, so that a server nobody sends work to while it is
			// unready becomes ready again by itself.
			w.streak, w.last = 0, nil
		}
		h.noteLocked(n, w)
	}
}

// Run probes every Interval on the clock, counted from the end of the
// previous probe, until ctx ends.
func (h *Health) Run(ctx context.Context) {
	due := make(chan struct{}, 1)
	for {
		t := h.cfg.Clock.AfterFunc(h.cfg.Interval, func() { due <- struct{}{} })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-due:
			h.Probe(ctx)
		}
	}
}

// Reasons says why backends are not ready, one sentence each ("model:
// GET http://127.0.0.1:11434/v1/models: connect: connection refused"); none
// when every backend is ready.
func (h *Health) Reasons() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, n := range h.order {
		if r := h.reasonLocked(h.b[n]); r != "" {
			out = append(out, n+": "+r)
		}
	}
	return out
}

// Ready is Reasons as an error (errors.Join of one per reason), for
// session.Config.Ready: nil when every backend is ready.
func (h *Health) Ready(context.Context) error {
	var errs []error
	for _, r := range h.Reasons() {
		errs = append(errs, errors.New(r))
	}
	return errors.Join(errs...)
}

func (h *Health) reasonLocked(w *watched) string {
	switch {
	case w.probed != nil:
		return w.probed.Error()
	case h.cfg.FailuresInARow > 0 && w.streak >= h.cfg.FailuresInARow:
		return fmt.Sprintf("%d turns failed in a row (last: %v)", w.streak, w.last)
	}
	return ""
}

// noteLocked logs a backend's change of readiness.
func (h *Health) noteLocked(name string, w *watched) {
	r := h.reasonLocked(w)
	switch down := r != ""; {
	case down && !w.down:
		h.log.Warn("backend not ready: /readyz answers 503", "backend", name, "reason", r)
	case !down && w.down:
		h.log.Info("backend ready again", "backend", name)
	}
	w.down = r != ""
}
