package redisstage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// DispatcherOptions tune a Dispatcher. Zero values take the defaults.
type DispatcherOptions struct {
	// Clock stamps offers and arms the head's deadline; clock.System when nil.
	Clock clock.Clock
	// Poll is the backstop interval at which a replica with waiting work
	// pumps the queue and reconciles its tickets, covering a missed
	// pub/sub message or capacity that came back when a dead replica's
	// lease ran out. Default 100ms.
	Poll time.Duration
	// Renew is how often a held lease is renewed. Default LeaseTTL/3.
	Renew time.Duration
	// Grace is how long past a queued job's deadline (Born + MaxAge) its
	// ticket may stay undecided before this replica resolves it Expired on
	// its own, so that a caller never waits on a store that cannot be
	// reached. Default 1s.
	Grace time.Duration
	// Claim makes the Dispatcher a claim.Gate: work is admitted only
	// by Claim, on any replica, and the claimer's replica holds and renews
	// the lease (and releases it), not the submitter's; heads still expire
	// at their deadline. The fallback's callback and handoff queues.
	Claim bool
}

// A Dispatcher owns time for a Store on one replica, as admit.Dispatcher does
// for a Controller: every operation also pumps the fleet-wide queue in the same
// script (so a release on any replica admits the head at once, wherever it
// was submitted), and replicas learn the outcome of their own tickets from a
// Redis pub/sub channel the scripts publish to. It satisfies stages.Gate.
type Dispatcher struct {
	s     *Store
	clock clock.Clock
	poll  time.Duration
	renew time.Duration
	grace time.Duration
	pump  int // negative for a claim stage: expire only (lua.go)
	claim bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	waiting map[string]*Ticket
	held    map[string]*Ticket
	// abandoned are tickets this replica resolved on its own while Redis
	// could not be reached (abandon): the store may still queue or admit
	// them, so the backstop withdraws them there, and a lease granted to
	// one is released at once.
	abandoned map[string]time.Time
	alarm     admit.Alarm // the head's deadline
}

var _ stages.Gate = (*Dispatcher)(nil)

// NewDispatcher starts a Dispatcher for s: a goroutine reading the stage's
// event channel and one polling as a backstop, both ended by Stop.
func NewDispatcher(s *Store, opt DispatcherOptions) *Dispatcher {
	if opt.Clock == nil {
		opt.Clock = clock.System
	}
	if opt.Poll <= 0 {
		opt.Poll = 100 * time.Millisecond
	}
	if opt.Renew <= 0 {
		opt.Renew = s.opt.LeaseTTL / 3
	}
	if opt.Grace <= 0 {
		opt.Grace = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	pump := s.limits.Slots + s.limits.Waiting
	if opt.Claim {
		pump = -pump
	}
	d := &Dispatcher{
		s: s, clock: opt.Clock, poll: opt.Poll, renew: opt.Renew, grace: opt.Grace,
		pump: pump, claim: opt.Claim,
		ctx: ctx, cancel: cancel,
		waiting: make(map[string]*Ticket), held: make(map[string]*Ticket), abandoned: make(map[string]time.Time),
	}
	ps := s.rdb.Subscribe(ctx, s.prefix+"ev")
	d.wg.Add(2)
	go d.listen(ps)
	go d.backstop()
	return d
}

// Store returns the dispatcher's store.
func (d *Dispatcher) Store() *Store { return d.s }

// Submit offers job now. Refused work returns its disposition and a nil
// Pending; queued work returns Queued and a *Ticket. When Redis cannot be
// reached it returns Closed and an error wrapping admit.ErrUnavailable.
func (d *Dispatcher) Submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	t, disp, err := d.SubmitTicket(ctx, job)
	if t == nil {
		return nil, disp, err
	}
	return t, disp, err
}

// SubmitTicket is Submit returning the concrete *Ticket.
func (d *Dispatcher) SubmitTicket(ctx context.Context, job stages.Job) (*Ticket, stages.Disposition, error) {
	now := d.clock.Now()
	t := newTicket(d, job, now)
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil, stages.Closed, fmt.Errorf("%w: dispatcher stopped", admit.ErrUnavailable)
	}
	if _, dup := d.waiting[job.ID]; dup {
		d.mu.Unlock()
		return nil, 0, fmt.Errorf("%w: %q", admit.ErrDuplicate, job.ID)
	}
	// Registered before the script runs, so that an admission published
	// by another replica's pump finds the ticket.
	d.waiting[job.ID] = t
	d.mu.Unlock()
	disp, r, err := d.s.offer(ctx, job, now, d.pump)
	if err != nil || disp != stages.Queued {
		d.mu.Lock()
		if d.waiting[job.ID] == t {
			delete(d.waiting, job.ID)
		}
		d.mu.Unlock()
		return nil, disp, err
	}
	d.mu.Lock()
	t.offered = true
	d.mu.Unlock()
	d.apply(r, now)
	return t, stages.Queued, nil
}

// Release returns the lease of id, admitted through this Dispatcher,
// presenting its fencing token, and admits waiting work into the slot. It
// returns stages.ErrFenced when the lease was lost, admit.ErrNoLease when
// this replica holds no lease for id. When Redis is unreachable the lease is
// no longer renewed and returns to the fleet when its TTL runs out.
func (d *Dispatcher) Release(ctx context.Context, id string) (stages.Disposition, error) {
	return d.release(ctx, id, false)
}

// ReleaseFailed is Release after the work's backend failed: the fleet's
// ledger counts it failed, not completed.
func (d *Dispatcher) ReleaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	return d.release(ctx, id, true)
}

func (d *Dispatcher) release(ctx context.Context, id string, failed bool) (stages.Disposition, error) {
	d.mu.Lock()
	t := d.held[id]
	delete(d.held, id)
	d.mu.Unlock()
	if t == nil {
		return 0, fmt.Errorf("%w: %q not held by this replica", admit.ErrNoLease, id)
	}
	t.stopRenew()
	now := d.clock.Now()
	disp, r, err := d.s.release(ctx, t.currentLease(), failed, d.pump, now)
	if err != nil {
		return disp, err
	}
	d.apply(r, now)
	return disp, nil
}

// Rotate advances owner's generation fleet-wide. Its queued tickets on this
// replica resolve as Cancelled before Rotate returns; those on other replicas
// as soon as their replica hears of it.
//
// When Redis cannot be reached, the owner's older tickets on this replica
// resolve Cancelled here all the same (work of a generation the caller has
// left must not wait on an outage), and the error wraps
// admit.ErrUnavailable.
func (d *Dispatcher) Rotate(ctx context.Context, owner string, generation uint64) error {
	now := d.clock.Now()
	r, err := d.s.rotate(ctx, owner, generation, now, d.pump)
	if err != nil {
		if errors.Is(err, admit.ErrUnavailable) {
			d.abandon(stages.Cancelled, now, func(j stages.Job) bool { return j.Owner == owner && j.Generation < generation })
		}
		return err
	}
	d.cancelled(r.extra, now)
	d.apply(r, now)
	return nil
}

// Forget ends owner's conversation fleet-wide. When Redis cannot be
// reached, the owner's tickets on this replica resolve Cancelled here.
func (d *Dispatcher) Forget(ctx context.Context, owner string) error {
	now := d.clock.Now()
	d.s.forgetOwner(owner)
	r, err := d.s.run(ctx, forgetScript, d.pump, now, owner)
	if err != nil {
		d.abandon(stages.Cancelled, now, func(j stages.Job) bool { return j.Owner == owner })
		return err
	}
	d.cancelled(r.extra, now)
	d.apply(r, now)
	return nil
}

// Cancel withdraws one piece of work wherever it was submitted. When Redis
// cannot be reached, its ticket on this replica resolves Cancelled here and
// Cancel returns Cancelled with an error wrapping admit.ErrUnavailable.
func (d *Dispatcher) Cancel(ctx context.Context, id string) (stages.Disposition, error) {
	now := d.clock.Now()
	disp, r, err := d.s.cancel(ctx, id, now, d.pump)
	if err != nil {
		if errors.Is(err, admit.ErrUnavailable) {
			d.abandon(stages.Cancelled, now, func(j stages.Job) bool { return j.ID == id })
			return stages.Cancelled, err
		}
		return disp, err
	}
	d.mu.Lock()
	if t := d.waiting[id]; t != nil && disp == stages.Cancelled {
		d.resolve(t, stages.Cancelled, now, 0)
	}
	d.mu.Unlock()
	d.apply(r, now)
	return disp, nil
}

// Snapshot reports the fleet-wide inventory and ledger now.
func (d *Dispatcher) Snapshot(ctx context.Context) (stages.Snapshot, error) {
	return d.s.Snapshot(ctx, d.clock.Now())
}

// Waiting is empty: the fleet-wide queue is shown by its counts in
// Snapshot, not listed.
func (d *Dispatcher) Waiting(context.Context) ([]admit.Waiter, error) { return nil, nil }

// Ready reports nil when Redis answers and admission can be decided.
func (d *Dispatcher) Ready(ctx context.Context) error { return d.s.Ready(ctx) }

// Stop ends the dispatcher's goroutines, timer and lease renewals, and waits
// for them. Leases still held run out after their TTL; tickets still waiting
// stay unresolved.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.alarm.Clear()
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// cancelled resolves the local tickets among the queued identities a
// script cancelled.
func (d *Dispatcher) cancelled(extra any, now time.Time) {
	ids, _ := extra.([]any)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range ids {
		id, _ := v.(string)
		if t := d.waiting[id]; t != nil {
			d.resolve(t, stages.Cancelled, now, 0)
		}
	}
}

// apply resolves local tickets among a pump's steps and arms the timer for
// the head's deadline.
func (d *Dispatcher) apply(r reply, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, st := range r.steps {
		d.settle(st.id, st.disp, now, st.token)
	}
	d.arm(r.deadline, now)
}

// settle resolves the local ticket id with what the store decided. A lease
// granted to work this replica abandoned is released at once. It runs under
// d.mu.
func (d *Dispatcher) settle(id string, disp stages.Disposition, now time.Time, token uint64) {
	if t := d.waiting[id]; t != nil {
		d.resolve(t, disp, now, token)
		return
	}
	if _, ok := d.abandoned[id]; ok && disp == stages.Admitted && !d.claim {
		delete(d.abandoned, id)
		d.releaseAbandoned(Lease{ID: id, Token: token})
	}
}

// abandon resolves this replica's waiting tickets that match as disp (the
// store could not be told, or did not decide in time) and remembers them,
// so that the backstop withdraws them from the store once it answers.
func (d *Dispatcher) abandon(disp stages.Disposition, now time.Time, match func(stages.Job) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, t := range d.waiting {
		if match(t.Job) {
			d.resolve(t, disp, now, 0)
			d.abandoned[id] = now
		}
	}
}

// releaseAbandoned gives back, in the background, a lease the store granted
// to work this replica no longer waits for. It runs under d.mu.
func (d *Dispatcher) releaseAbandoned(l Lease) {
	if d.stopped {
		return // the lease runs out by its TTL
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.ctx, d.poll*5)
		defer cancel()
		if _, r, err := d.s.release(ctx, l, false, d.pump, d.clock.Now()); err == nil {
			d.apply(r, d.clock.Now())
		}
	}()
}

// resolve runs under d.mu.
func (d *Dispatcher) resolve(t *Ticket, disp stages.Disposition, now time.Time, token uint64) {
	delete(d.waiting, t.Job.ID)
	t.result, t.resolved = disp, now
	if disp == stages.Admitted && !d.claim { // a claim's lease is its claimer's (Claim)
		t.lease = Lease{ID: t.Job.ID, Token: token}
		d.hold(t)
	}
	close(t.done)
}

// hold keeps t's lease, renewed until Release or Stop. Under d.mu.
func (d *Dispatcher) hold(t *Ticket) {
	ctx, cancel := context.WithCancel(d.ctx)
	t.stopRenew = cancel
	d.held[t.Job.ID] = t
	if !d.stopped {
		d.wg.Add(1)
		go d.renewLoop(ctx, t)
	}
}

func (d *Dispatcher) arm(deadline, now time.Time) {
	if d.stopped {
		return
	}
	if deadline.IsZero() {
		d.alarm.Clear()
		return
	}
	// Expiry is strictly after MaxAge, so wake just past the deadline.
	d.alarm.Set(d.clock, deadline.Add(time.Nanosecond), now, d.fire)
}

func (d *Dispatcher) fire(seq uint64) {
	d.mu.Lock()
	if d.stopped || !d.alarm.Fired(seq) {
		d.mu.Unlock()
		return
	}
	d.wg.Add(1)
	d.mu.Unlock()
	defer d.wg.Done()
	d.pumpNow()
}

func (d *Dispatcher) pumpNow() {
	ctx, cancel := context.WithTimeout(d.ctx, d.poll*5)
	defer cancel()
	now := d.clock.Now()
	if r, err := d.s.run(ctx, pumpScript, d.pump, now); err == nil {
		d.apply(r, now)
	}
}

// renewLoop keeps t's lease alive until ctx ends (Release or Stop). A lease
// is given up as lost when renewal is fenced, or once a whole TTL has passed
// since the last successful renewal was sent: by then the server may have
// expired it, and no earlier than the server can have.
func (d *Dispatcher) renewLoop(ctx context.Context, t *Ticket) {
	defer d.wg.Done()
	wall := d.s.opt.Wall
	tick := clock.NewTimer(wall, d.renew)
	defer tick.Stop()
	// The lease was granted before this replica learnt of it, so the
	// server's expiry is later than now + TTL: giving up at that local
	// time is on the safe side.
	expiry := clock.NewTimer(wall, d.s.opt.LeaseTTL)
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			t.markLost()
			return
		case <-tick.C:
		}
		sent := wall.Now()
		// A renewal may take up to half a TTL: on a loaded machine a round
		// trip can outlast the renewal period, and giving up on it early
		// would let the lease run out while the holder is alive.
		rctx, cancel := context.WithTimeout(ctx, d.s.opt.LeaseTTL/2)
		l, cancelled, err := d.s.renew(rctx, t.currentLease(), t.Job)
		cancel()
		switch {
		case err == nil:
			t.setLease(l) // a new token when Redis lost its data and the lease was granted again
			expiry.Reset(d.s.opt.LeaseTTL - clock.Since(wall, sent))
			tick.Reset(d.renew)
			if cancelled {
				t.markCancelled()
			}
		case errors.Is(err, stages.ErrFenced):
			t.markLost()
			return
		default: // retry soon rather than a whole period later
			tick.Reset(d.renew / 4)
		}
	}
}
