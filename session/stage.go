package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Ticket is queued work waiting for its outcome; *stages.Ticket is one.
type Ticket interface {
	Done() <-chan struct{}
	// Result is Admitted, Expired or Cancelled, valid once Done is closed.
	Result() (stages.Disposition, time.Time)
	// Position is the place in the queue, 1 being next, while queued.
	Position() (int, bool)
}

// Admitter is what a call needs from a stage's admission policy. The
// frontdoor policy (NewAdmitter) is a stages.Controller driven by a
// stages.Dispatcher; other policies, such as the baselines the load
// generator compares against, implement the same methods.
type Admitter interface {
	// Submit offers job now; queued work gets a Ticket.
	Submit(job stages.Job) (Ticket, stages.Disposition, error)
	// Release returns a lease after the work's backend returned.
	Release(id string) (stages.Disposition, error)
	// Rotate advances owner's generation: queued work is cancelled, active
	// work keeps its lease until Release.
	Rotate(owner string, generation uint64) error
	// Forget ends owner's conversation, as Rotate, and drops the owner.
	Forget(owner string)
	// Cancel withdraws one piece of work.
	Cancel(id string) (stages.Disposition, error)
	// Close closes admission (drain).
	Close()
	// Snapshot reports limits, inventory and the ledger.
	Snapshot() stages.Snapshot
	// Waiting lists the queue in order.
	Waiting() []stages.Waiter
	// Stop ends the admitter's timers at shutdown.
	Stop()
}

// NewAdmitter returns the frontdoor admission policy for one stage: a
// bounded stages.Controller with a Dispatcher that owns its time.
func NewAdmitter(l stages.Limits, clock stages.Clock, opts ...stages.Option) (Admitter, error) {
	if clock == nil {
		clock = stages.SystemClock
	}
	c, err := stages.New(l, append([]stages.Option{stages.WithClock(clock.Now)}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &dispatcherAdmitter{stages.NewDispatcher(c, clock)}, nil
}

type dispatcherAdmitter struct{ *stages.Dispatcher }

func (a *dispatcherAdmitter) Submit(job stages.Job) (Ticket, stages.Disposition, error) {
	t, d, err := a.Dispatcher.Submit(job)
	if t == nil {
		return nil, d, err
	}
	return t, d, err
}

func (a *dispatcherAdmitter) Snapshot() stages.Snapshot {
	return a.Controller().SnapshotAt(a.Clock().Now())
}

func (a *dispatcherAdmitter) Waiting() []stages.Waiter {
	return a.Controller().Waiting(a.Clock().Now())
}

// stage is one named admission stage of the server, with the bookkeeping
// the controller does not keep: which cancelled leases are overdue.
type stage struct {
	name    string
	adm     Admitter
	timeout time.Duration // cleanup timeout
	log     *slog.Logger
	m       *metrics

	overdue  atomic.Int64 // leases cancelled longer than timeout ago, still held
	viewOnly bool         // owned elsewhere: shown, not closed by a drain
	q        quarantine   // quarantine.go
}

// hold runs work under the lease of job id and releases the lease only
// after work has returned: that return is the release evidence. If ctx is
// cancelled and work has not returned within the cleanup timeout, the lease
// is reported overdue (metric, /v1/stages, a warning) and stays held.
func (s *stage) hold(ctx context.Context, id string, work func(context.Context) error) (stages.Disposition, error) {
	w := &watch{s: s, id: id}
	stop := context.AfterFunc(ctx, w.cancelled)
	err := work(ctx)
	stop()
	w.returned()
	d, rerr := s.adm.Release(id)
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
	timer    *time.Timer
	late     bool
	finished bool
}

func (w *watch) cancelled() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.at = time.Now()
	w.timer = time.AfterFunc(w.s.timeout, w.expire)
}

func (w *watch) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.late = true
	w.s.overdue.Add(1)
	w.s.m.overdueTotal.WithLabelValues(w.s.name).Inc()
	w.s.log.Warn("cleanup overdue: lease still held", "stage", w.s.name, "job", w.id,
		"cancelled_ago", time.Since(w.at).Round(time.Millisecond), "cleanup_timeout", w.s.timeout)
	w.s.cleanupLate()
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
			"cleanup", time.Since(w.at).Round(time.Millisecond))
		w.s.cleanupConfirmed()
	} else if !w.at.IsZero() {
		w.s.cleanupOnTime()
	}
}

// controllerAdmitter shows a stage whose work is admitted elsewhere (such as
// a fallback queue that admits on a human's claim) in /v1/stages, /metrics
// and drain. Its owner offers and releases work on the Controller directly.
type controllerAdmitter struct {
	c     *stages.Controller
	clock stages.Clock
}

var errNotDispatched = errors.New("session: this stage admits through its own owner")

func (a controllerAdmitter) Submit(stages.Job) (Ticket, stages.Disposition, error) {
	return nil, 0, errNotDispatched
}
func (a controllerAdmitter) Release(id string) (stages.Disposition, error) { return a.c.Release(id) }
func (a controllerAdmitter) Rotate(owner string, gen uint64) error         { return a.c.Rotate(owner, gen) }
func (a controllerAdmitter) Forget(owner string)                           { a.c.Forget(owner) }
func (a controllerAdmitter) Cancel(id string) (stages.Disposition, error)  { return a.c.Cancel(id) }
func (a controllerAdmitter) Close()                                        { a.c.Close() }
func (a controllerAdmitter) Snapshot() stages.Snapshot                     { return a.c.SnapshotAt(a.clock.Now()) }
func (a controllerAdmitter) Waiting() []stages.Waiter                      { return a.c.Waiting(a.clock.Now()) }
func (a controllerAdmitter) Stop()                                         {}

// AddController shows a stage owned elsewhere (for example the fallback
// callback and handoff queues) in /v1/stages and /metrics. A drain leaves
// it open: callers refused while the server drains may still book a
// durable callback; its owner closes it.
func (s *Server) AddController(name string, c *stages.Controller) {
	st := &stage{name: name, adm: controllerAdmitter{c: c, clock: s.cfg.Clock}, timeout: s.cfg.CleanupTimeout,
		log: s.log, m: s.m, viewOnly: true}
	s.mu.Lock()
	s.extra = append(s.extra, st)
	s.mu.Unlock()
}

// viewAdmitter shows a stage known only by its snapshots, such as a
// fleet-wide fallback queue in Redis whose waiting list lives there.
type viewAdmitter struct {
	snap func() stages.Snapshot
}

func (a viewAdmitter) Submit(stages.Job) (Ticket, stages.Disposition, error) {
	return nil, 0, errNotDispatched
}
func (a viewAdmitter) Release(string) (stages.Disposition, error) { return 0, errNotDispatched }
func (a viewAdmitter) Rotate(string, uint64) error                { return errNotDispatched }
func (a viewAdmitter) Forget(string)                              {}
func (a viewAdmitter) Cancel(string) (stages.Disposition, error)  { return 0, errNotDispatched }
func (a viewAdmitter) Close()                                     {}
func (a viewAdmitter) Snapshot() stages.Snapshot                  { return a.snap() }
func (a viewAdmitter) Waiting() []stages.Waiter                   { return nil }
func (a viewAdmitter) Stop()                                      {}

// AddView shows a stage owned elsewhere by its snapshots alone, in
// /v1/stages and /metrics: the fleet-wide fallback queues, whose inventory
// and ledger are in Redis. snap is called on every scrape; it must not
// wait long.
func (s *Server) AddView(name string, snap func() stages.Snapshot) {
	st := &stage{name: name, adm: viewAdmitter{snap: snap}, timeout: s.cfg.CleanupTimeout,
		log: s.log, m: s.m, viewOnly: true}
	s.mu.Lock()
	s.extra = append(s.extra, st)
	s.mu.Unlock()
}
