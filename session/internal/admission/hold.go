package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

// ErrLeaseLost is the cause of a backend context cancelled because its
// lease was lost: the slot may already be someone else's, so the work must
// stop. Hold returns it inside a backend.Error of the kind "unavailable"
// (the store could not keep the lease), not as a barge-in.
var ErrLeaseLost = errors.New("session: lease lost while the work ran")

// Lease is an admitted job's lease as Hold keeps it.
type Lease struct {
	ID string
	// Lost is closed when the store lost the lease (stages.Pending.Lost;
	// nil: a lease that cannot be lost, in process).
	Lost <-chan struct{}
	// OnLost runs when Lost closes, before the work's context is
	// cancelled: the owner silences what the work already queued.
	OnLost func()
	// Owner is the context of what the work belongs to (a turn): its end
	// means the work was stopped (a barge-in, the call's end), not that it
	// failed. nil: Hold's ctx.
	Owner context.Context
	// Log tells of a lease lost (nil: the stage's logger).
	Log *slog.Logger
}

// Hold runs work under lease l and releases the lease only after work has
// returned: that return is the release evidence. If ctx is cancelled and
// work has not returned within the cleanup timeout, the lease is reported
// overdue (metric, Overdue, a warning) and stays held. When l.Lost closes,
// the work's context is cancelled with the cause ErrLeaseLost, and its
// error, unless the owner was stopped, becomes a backend.Error of the kind
// "unavailable" wrapping ErrLeaseLost; work that returned without error
// keeps its result even if the lease was lost just after. The release that
// follows a lost lease is refused as fenced (or the store does not answer):
// the disposition is then Completed, or Failed after an error, and the
// lease runs out by its TTL.
func (s *Stage) Hold(ctx context.Context, l Lease, work func(context.Context) error) (disp stages.Disposition, err error) {
	owner := l.Owner
	if owner == nil {
		owner = ctx
	}
	defer func() {
		if disp == 0 { // 0 is not a disposition a caller can be sent
			disp = stages.Completed
			if err != nil && owner.Err() == nil {
				disp = stages.Failed
			}
		}
	}()
	if l.Lost == nil {
		return s.hold(ctx, l.ID, work)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() { // ends when the lease is lost or Hold returns
		defer close(watched)
		select {
		case <-l.Lost:
			if l.OnLost != nil {
				l.OnLost()
			}
			cancel(ErrLeaseLost)
		case <-ctx.Done():
		}
	}()
	disp, err = s.hold(ctx, l.ID, work)
	wasLost := errors.Is(context.Cause(ctx), ErrLeaseLost)
	cancel(context.Canceled)
	<-watched
	if err != nil && wasLost && owner.Err() == nil {
		log := l.Log
		if log == nil {
			log = s.cfg.Log
		}
		log.Warn("lease lost: work stopped", "stage", s.cfg.Name, "job", l.ID)
		err = &backend.Error{Kind: backend.KindUnavailable, Backend: "store", Op: "lease", Err: ErrLeaseLost}
	}
	return disp, err
}

// hold runs work under the lease of job id, watched, and releases it.
func (s *Stage) hold(ctx context.Context, id string, work func(context.Context) error) (stages.Disposition, error) {
	w := &watch{s: s, id: id}
	stop := context.AfterFunc(ctx, w.cancelled)
	since := s.cfg.Clock.Now()
	err := work(ctx)
	stop()
	w.returned()
	s.observeHeld(ctx, since, err)
	release := s.Release
	if err != nil && ctx.Err() == nil { // failed, not stopped by a cancel
		release = s.releaseFailed
	}
	d, rerr := release(ctx, id)
	if errors.Is(rerr, stages.ErrFenced) { // the lease ran out while the work ran: nothing left to release
		s.cfg.Log.Warn("release refused: lease lost", "stage", s.cfg.Name, "job", id)
	} else if rerr != nil {
		s.cfg.Log.Error("release", "stage", s.cfg.Name, "job", id, "err", rerr)
	}
	return d, err
}

// watch times one lease's cleanup after cancellation.
type watch struct {
	s  *Stage
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
	w.at = w.s.cfg.Clock.Now()
	w.timer = w.s.cfg.Clock.AfterFunc(w.s.cfg.Cleanup, w.expire)
}

func (w *watch) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.late = true
	w.s.overdue.Add(1)
	w.s.cfg.Metrics.Overdue.WithLabelValues(w.s.cfg.Name).Inc()
	w.s.cfg.Log.Warn("cleanup overdue: lease still held", "stage", w.s.cfg.Name, "job", w.id,
		"cancelled_ago", clock.Since(w.s.cfg.Clock, w.at).Round(time.Millisecond), "cleanup_timeout", w.s.cfg.Cleanup)
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
		w.s.cfg.Log.Warn("overdue cleanup confirmed: lease released", "stage", w.s.cfg.Name, "job", w.id,
			"cleanup", clock.Since(w.s.cfg.Clock, w.at).Round(time.Millisecond))
		w.s.q.Confirmed()
	} else if !w.at.IsZero() {
		w.s.q.OnTime()
	}
}
