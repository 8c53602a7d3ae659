package admit

import (
	"context"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A Dispatcher owns time for a Controller. It takes waiting work whenever a
// slot may have freed (after every Submit, Release, Rotate, Forget, Cancel
// and Reopen) and when the head of the queue passes its deadline, so expiry
// is reported as it happens, without polling, and a release wakes waiting
// work at once. Every queued Submit gets a Ticket that resolves exactly once.
//
// A Dispatcher starts no goroutine of its own: its only timer is the head's
// deadline, and Stop ends it.
type Dispatcher struct {
	c   *Controller
	clk clock.Clock

	takeErr    func(error)
	takeErrors atomic.Uint64
	claim      bool // ClaimOnly: admit on Claim alone
	onResolve  func(id string, d Disposition)

	mu      sync.Mutex
	waiting map[string]*Ticket
	alarm   Alarm // the head's deadline
	stopped bool
	told    []resolution // for onResolve, once d.mu is released
}

type resolution struct {
	id   string
	disp Disposition
}

// DispatcherOption configures a Dispatcher.
type DispatcherOption func(*Dispatcher)

// OnTakeError has f told of every error Take returns while the dispatcher
// pumps (a clock that went backwards): the queue stays as it was, and the
// next operation pumps again. f runs under the dispatcher's lock and must
// not call back into it. Without it such errors are dropped.
func OnTakeError(f func(error)) DispatcherOption {
	return func(d *Dispatcher) { d.takeErr = f }
}

// OnResolve has f told of every ticket's outcome (Admitted, Expired,
// Cancelled) once the dispatcher's lock is released, in the goroutine of the
// operation or the timer that decided it: an owner that keeps state beside
// the queue (the fallback's stores) learns of expiry without a goroutine
// per ticket. f may call the dispatcher.
func OnResolve(f func(id string, d Disposition)) DispatcherOption {
	return func(d *Dispatcher) { d.onResolve = f }
}

// NewDispatcher returns a Dispatcher for c. A nil clock is clock.System.
func NewDispatcher(c *Controller, clk clock.Clock, opts ...DispatcherOption) *Dispatcher {
	if clk == nil {
		clk = clock.System
	}
	d := &Dispatcher{c: c, clk: clk, waiting: make(map[string]*Ticket)}
	for _, o := range opts {
		o(d)
	}
	return d
}

// TakeErrors is how many times Take failed while d pumped.
func (d *Dispatcher) TakeErrors() uint64 { return d.takeErrors.Load() }

// Controller returns the controller d dispatches for.
func (d *Dispatcher) Controller() *Controller { return d.c }

// Clock returns d's clock.
func (d *Dispatcher) Clock() clock.Clock { return d.clk }

// Ticket is queued work waiting for its outcome.
type Ticket struct {
	Job     Job
	Offered time.Time // when the ticket was queued

	done     chan struct{}
	result   Disposition
	resolved time.Time
	d        *Dispatcher
}

// Done is closed once the ticket has its outcome.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Result reports the outcome: Admitted, Expired or Cancelled, and the time it
// was decided. It is valid only after Done is closed.
func (t *Ticket) Result() (Disposition, time.Time) { return t.result, t.resolved }

// Wait blocks until the ticket has its outcome or ctx is done. Giving up on
// waiting does not withdraw the work: call Dispatcher.Cancel for that.
func (t *Ticket) Wait(ctx context.Context) (Disposition, error) {
	select {
	case <-t.done:
		return t.result, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Position reports the ticket's place in the queue, 1 being the head, or
// false once it has left the queue. It never fails.
func (t *Ticket) Position(context.Context) (int, bool, error) {
	n, ok := t.d.c.Position(t.Job.ID)
	return n, ok, nil
}

// Lost is nil: an in-process lease is never lost, only released.
func (t *Ticket) Lost() <-chan struct{} { return nil }

// Submit offers job now. Refused work returns its disposition and no ticket;
// queued work returns Queued and a ticket, which may already be resolved.
func (d *Dispatcher) Submit(job Job) (*Ticket, Disposition, error) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	disp, err := d.c.Offer(job, now)
	if err != nil || disp != Queued {
		return nil, disp, err
	}
	t := &Ticket{Job: job, Offered: now, done: make(chan struct{}), d: d}
	d.waiting[job.ID] = t
	d.pump(now)
	return t, Queued, nil
}

// Release returns id's lease and admits waiting work into the freed slot.
func (d *Dispatcher) Release(id string) (Disposition, error) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	disp, err := d.c.releaseAt(id, false, now)
	if err == nil {
		d.pump(now)
	}
	return disp, err
}

// ReleaseFailed is Release for work whose backend failed: the release is
// counted Failed (Controller.ReleaseFailed).
func (d *Dispatcher) ReleaseFailed(id string) (Disposition, error) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	disp, err := d.c.releaseAt(id, true, now)
	if err == nil {
		d.pump(now)
	}
	return disp, err
}

// Rotate advances owner's generation (see Controller.Rotate). Tickets of its
// queued work resolve as Cancelled before Rotate returns.
func (d *Dispatcher) Rotate(owner string, generation uint64) error {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	d.c.mu.Lock()
	err := d.c.rotate(owner, generation, now, d.cancelled(now))
	d.c.mu.Unlock()
	if err == nil {
		d.pump(now)
	}
	return err
}

// Forget ends owner's conversation (see Controller.Forget). Tickets of its
// queued work resolve as Cancelled before Forget returns.
func (d *Dispatcher) Forget(owner string) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	d.c.mu.Lock()
	d.c.forget(owner, now, d.cancelled(now))
	d.c.mu.Unlock()
	d.pump(now)
}

// Cancel withdraws one piece of work (see Controller.Cancel); a waiting
// ticket resolves as Cancelled.
func (d *Dispatcher) Cancel(id string) (Disposition, error) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	disp, err := d.c.Cancel(id, now)
	if err == nil {
		if t := d.waiting[id]; t != nil {
			d.resolve(t, Cancelled, now)
		}
		d.pump(now)
	}
	return disp, err
}

// Close closes admission (see Controller.Close). Queued work still runs.
func (d *Dispatcher) Close() { d.c.setClosed(true, d.clk.Now()) }

// Reopen opens admission again.
func (d *Dispatcher) Reopen() {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	d.c.setClosed(false, now)
	d.pump(now)
}

// Stop cancels the dispatcher's timer. Work still queued stays queued; Stop
// is for shutdown, after which no expiry is reported.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	defer d.unlock()
	d.stopped = true
	d.alarm.Clear()
	if d.c.rec != nil { // a replay must know that expiry no longer fires
		d.c.mu.Lock()
		d.c.record(Operation{Op: OpStop, At: d.clk.Now()})
		d.c.mu.Unlock()
	}
}

func (d *Dispatcher) cancelled(now time.Time) func(string, bool) {
	return func(id string, queued bool) {
		if t := d.waiting[id]; t != nil && queued {
			d.resolve(t, Cancelled, now)
		}
	}
}

func (d *Dispatcher) resolve(t *Ticket, disp Disposition, now time.Time) {
	if d.onResolve != nil {
		d.told = append(d.told, resolution{t.Job.ID, disp})
	}
	delete(d.waiting, t.Job.ID)
	t.result, t.resolved = disp, now
	close(t.done)
}

// pump takes work until the controller is busy or empty, then arms the timer
// for the head's deadline. It runs under d.mu.
func (d *Dispatcher) pump(now time.Time) {
	if d.claim {
		d.expireOnly(now)
		d.arm(now)
		return
	}
	for {
		disp, id, err := d.c.Take(now)
		if err != nil {
			d.takeErrors.Add(1)
			if d.takeErr != nil {
				d.takeErr(err)
			}
		}
		if err != nil || (disp != Admitted && disp != Expired) {
			break
		}
		if t := d.waiting[id]; t != nil {
			d.resolve(t, disp, now)
		}
	}
	d.arm(now)
}

func (d *Dispatcher) arm(now time.Time) {
	if d.stopped {
		return
	}
	d.c.mu.Lock()
	expires, ok := d.c.head()
	maxAge := d.c.eff.MaxAge
	d.c.mu.Unlock()
	if !ok || maxAge == time.Duration(math.MaxInt64) { // a baseline that never expires work
		d.alarm.Clear()
		return
	}
	// Expiry is strictly after the deadline, so wake just past it.
	d.alarm.Set(d.clk, expires.Add(time.Nanosecond), now, d.fire)
}

// unlock releases d.mu, then tells OnResolve what was resolved under it.
func (d *Dispatcher) unlock() {
	if len(d.told) == 0 {
		d.mu.Unlock()
		return
	}
	told := d.told
	d.told = nil
	d.mu.Unlock()
	for _, r := range told {
		d.onResolve(r.id, r.disp)
	}
}

func (d *Dispatcher) fire(seq uint64) {
	d.mu.Lock()
	defer d.unlock()
	if d.stopped || !d.alarm.Fired(seq) {
		return
	}
	d.pump(d.clk.Now())
}
