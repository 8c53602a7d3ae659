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

// GateOptions tune NewGateAdmitter. Zero values take the defaults.
type GateOptions struct {
	// Timeout bounds each call to the gate (the Admitter's methods take no
	// context). Default 1s.
	Timeout time.Duration
	// Grace is how long after a queued job's deadline (Born + MaxAge) its
	// ticket is resolved Expired on this replica when the gate has not
	// decided, so that a caller never waits on a store that cannot be
	// reached. Default 1s.
	Grace time.Duration
	// Clock arms the local deadlines (nil: the system clock).
	Clock stages.Clock
	// Logger receives store outages (nil: discard).
	Logger *slog.Logger
}

// NewGateAdmitter adapts a stages.Gate, such as the fleet-wide
// redisstage.Dispatcher, to the Admitter a stage of the server needs; l are
// the gate's limits.
//
// Admission fails closed: when the gate's store cannot be reached, Submit
// returns stages.Closed (and logs the cause) so that the caller hears the
// truthful "we cannot take this now" prompt. The error is not returned,
// because the server reports a failed turn Submit as Stale. Work already
// queued is never left waiting on a store that does not answer: a Rotate,
// Forget or Cancel that fails resolves this replica's tickets at once, and
// a ticket whose deadline passed by Grace without a decision resolves
// Expired. Work the store admits after this replica gave up on it is
// released at once.
//
// Close closes admission on this replica only (a drain), never fleet-wide.
// Waiting is empty: the fleet's queue is in Snapshot.
func NewGateAdmitter(g stages.Gate, l stages.Limits, opt GateOptions) Admitter {
	if opt.Timeout <= 0 {
		opt.Timeout = time.Second
	}
	if opt.Grace <= 0 {
		opt.Grace = time.Second
	}
	if opt.Clock == nil {
		opt.Clock = stages.SystemClock
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &gateAdmitter{g: g, limits: l, opt: opt, ctx: ctx, cancel: cancel,
		tickets: map[string]*gateTicket{}, last: stages.Snapshot{Limits: l}}
}

type gateAdmitter struct {
	g      stages.Gate
	limits stages.Limits
	opt    GateOptions
	closed atomic.Bool

	ctx    context.Context // ends at Stop; owns the tickets' watchers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	tickets map[string]*gateTicket // queued through this replica, not yet resolved here
	last    stages.Snapshot        // shown while the store cannot be reached
}

func (a *gateAdmitter) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(a.ctx, a.opt.Timeout)
}

func (a *gateAdmitter) Submit(job stages.Job) (Ticket, stages.Disposition, error) {
	if a.closed.Load() || a.ctx.Err() != nil {
		return nil, stages.Closed, nil
	}
	ctx, cancel := a.call()
	p, d, err := a.g.Submit(ctx, job)
	cancel()
	if errors.Is(err, stages.ErrUnavailable) {
		a.opt.Logger.Warn("admission failed closed: store unavailable", "job", job.ID, "err", err)
		return nil, stages.Closed, nil
	}
	if err != nil || p == nil {
		return nil, d, err
	}
	t := &gateTicket{a: a, p: p, job: job, done: make(chan struct{}), gaveUp: make(chan struct{})}
	a.mu.Lock()
	a.tickets[job.ID] = t
	a.mu.Unlock()
	a.wg.Add(1)
	go a.watch(t)
	return t, d, nil
}

// watch resolves t from the gate, or locally when the gate does not decide
// in time; work the gate admits after t gave up is released at once.
func (a *gateAdmitter) watch(t *gateTicket) {
	defer a.wg.Done()
	defer a.untrack(t)
	late := make(chan struct{})
	timer := a.opt.Clock.AfterFunc(t.job.Born.Add(a.limits.MaxAge+a.opt.Grace).Sub(a.opt.Clock.Now()), func() { close(late) })
	defer timer.Stop()
	select {
	case <-t.p.Done():
		t.resolve(t.p.Result())
		return
	case <-late:
		a.opt.Logger.Warn("queued work undecided past its deadline: expired here", "job", t.job.ID)
		t.resolve(stages.Expired, a.opt.Clock.Now())
	case <-t.gaveUp:
	case <-a.ctx.Done():
		t.resolve(stages.Cancelled, a.opt.Clock.Now())
		return
	}
	ctx, cancel := a.call()
	_, _ = a.g.Cancel(ctx, t.job.ID)
	cancel()
	select {
	case <-t.p.Done():
		if d, _ := t.p.Result(); d == stages.Admitted {
			ctx, cancel := a.call()
			_, _ = a.g.Release(ctx, t.job.ID)
			cancel()
		}
	case <-a.ctx.Done():
	}
}

func (a *gateAdmitter) untrack(t *gateTicket) {
	a.mu.Lock()
	if a.tickets[t.job.ID] == t {
		delete(a.tickets, t.job.ID)
	}
	a.mu.Unlock()
}

// giveUp resolves this replica's tickets that match as Cancelled, after the
// gate could not be told to cancel them.
func (a *gateAdmitter) giveUp(match func(*gateTicket) bool) {
	now := a.opt.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tickets {
		if match(t) && t.resolve(stages.Cancelled, now) {
			close(t.gaveUp)
		}
	}
}

func (a *gateAdmitter) Release(id string) (stages.Disposition, error) {
	ctx, cancel := a.call()
	defer cancel()
	return a.g.Release(ctx, id)
}

func (a *gateAdmitter) Rotate(owner string, generation uint64) error {
	ctx, cancel := a.call()
	err := a.g.Rotate(ctx, owner, generation)
	cancel()
	if errors.Is(err, stages.ErrUnavailable) {
		a.giveUp(func(t *gateTicket) bool { return t.job.Owner == owner && t.job.Generation < generation })
	}
	return err
}

func (a *gateAdmitter) Forget(owner string) {
	ctx, cancel := a.call()
	err := a.g.Forget(ctx, owner)
	cancel()
	if err != nil {
		a.giveUp(func(t *gateTicket) bool { return t.job.Owner == owner })
	}
}

func (a *gateAdmitter) Cancel(id string) (stages.Disposition, error) {
	ctx, cancel := a.call()
	d, err := a.g.Cancel(ctx, id)
	cancel()
	if errors.Is(err, stages.ErrUnavailable) {
		a.giveUp(func(t *gateTicket) bool { return t.job.ID == id })
		return stages.Cancelled, err
	}
	return d, err
}

func (a *gateAdmitter) Close() { a.closed.Store(true) }

func (a *gateAdmitter) Snapshot() stages.Snapshot {
	ctx, cancel := a.call()
	sn, err := a.g.Snapshot(ctx)
	cancel()
	a.mu.Lock()
	if err == nil {
		a.last = sn
	} else {
		// Unknown while the store is away: the last inventory seen, shown
		// closed, as admission is.
		sn = a.last
		sn.Closed = true
	}
	a.mu.Unlock()
	sn.Closed = sn.Closed || a.closed.Load()
	return sn
}

func (a *gateAdmitter) Waiting() []stages.Waiter { return nil }

// Stop ends the watchers, then the gate.
func (a *gateAdmitter) Stop() {
	a.closed.Store(true)
	a.cancel()
	a.wg.Wait()
	a.g.Stop()
}

// Ready reports whether the gate can decide admission.
func (a *gateAdmitter) Ready(ctx context.Context) error { return a.g.Ready(ctx) }

// gateTicket is a stages.Pending seen through this replica: resolved by the
// gate, or here when the gate cannot decide.
type gateTicket struct {
	a      *gateAdmitter
	p      stages.Pending
	job    stages.Job
	gaveUp chan struct{} // closed when giveUp resolved it

	once   sync.Once
	done   chan struct{}
	result stages.Disposition
	at     time.Time
}

// resolve reports whether it was the first resolution.
func (t *gateTicket) resolve(d stages.Disposition, at time.Time) bool {
	first := false
	t.once.Do(func() {
		t.result, t.at, first = d, at, true
		close(t.done)
	})
	return first
}

func (t *gateTicket) Done() <-chan struct{} { return t.done }

func (t *gateTicket) Result() (stages.Disposition, time.Time) {
	select {
	case <-t.done:
		return t.result, t.at
	default:
		return 0, time.Time{}
	}
}

// Lost is the gate's lost-lease channel (redisstage.Ticket has one), or
// nil, which never closes.
func (t *gateTicket) Lost() <-chan struct{} {
	if l, ok := t.p.(LeaseLoser); ok {
		return l.Lost()
	}
	return nil
}

// Position asks the gate's ticket: a fleet-wide position when it has one.
func (t *gateTicket) Position() (int, bool) {
	select {
	case <-t.done:
		return 0, false
	default:
	}
	switch p := t.p.(type) {
	case interface{ Position() (int, bool) }:
		return p.Position()
	case interface {
		Position(context.Context) (int, bool, error)
	}:
		ctx, cancel := t.a.call()
		defer cancel()
		n, ok, err := p.Position(ctx)
		return n, ok && err == nil
	}
	return 0, false
}
