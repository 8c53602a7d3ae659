package fallback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/internal/claimq"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// localCallbacks is the callback queue of one process, the default of New:
// a claim gate of its own (internal/claimq over claim.New) over
// the durable CallbackStore, re-filled from the store at start-up, so that
// the bound and the ages hold across restarts. The store is the record;
// the gate decides admission. Its operations are serialized by mu, so the
// gate and the store agree.
type localCallbacks struct {
	CallbackStore // the record; the methods below put the gate in front

	q     *claimq.Queue
	clock clock.Clock
	lease time.Duration
	log   *slog.Logger
	ctx   context.Context // ends at Stop: timers' store writes

	mu      sync.Mutex
	jobs    map[string]string     // ref -> current job id in the gate
	leases  map[string]claimLease // ref -> the lease of this process's claim
	backlog bool                  // pending rows in the store that the gate had no room for
	stopped bool
	stop    context.CancelFunc

	leasesReturned atomic.Uint64
}

var _ CallbackQueue = (*localCallbacks)(nil)

// NewLocalCallbackQueue returns this process's callback queue over st with
// limits l and claims of lease, on clk (nil: clock.System), as New makes it
// in front of a store that is not a queue itself: for a claim gate over
// the Service's contract in tests (redisqueue.NewCallbackGateOn). log may
// be nil. Stop it before closing st.
func NewLocalCallbackQueue(ctx context.Context, st CallbackStore, l stages.Limits, lease time.Duration, clk clock.Clock, log *slog.Logger) (CallbackQueue, error) {
	if clk == nil {
		clk = clock.System
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return newLocalCallbacks(ctx, st, l, lease, clk, log)
}

// newLocalCallbacks puts this process's callback gate in front of st and
// re-fills it from st: unexpired claims take a slot again (or return to
// pending if the slots shrank), then pending callbacks are offered oldest
// first with their original acceptance time.
func newLocalCallbacks(ctx context.Context, st CallbackStore, l stages.Limits, lease time.Duration, clk clock.Clock, log *slog.Logger) (*localCallbacks, error) {
	q, err := claimq.New(l, clk)
	if err != nil {
		return nil, err
	}
	c := &localCallbacks{CallbackStore: st, q: q, clock: clk, lease: lease, log: log,
		jobs: map[string]string{}, leases: map[string]claimLease{}}
	c.ctx, c.stop = context.WithCancel(context.Background())
	q.OnExpire = func(ids []string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.expireLocked(ids)
		c.refillLocked(c.ctx)
	}
	q.ExpiredLocked = c.expireLocked // every operation runs under c.mu
	if err := c.restore(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *localCallbacks) restore(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	claimed, err := c.CallbackStore.List(ctx, 0, StatusClaimed)
	if err != nil {
		return err
	}
	for _, cb := range claimed {
		now := c.clock.Now()
		if cb.LeaseUntil.After(now) {
			id := jobID(cb.Ref, cb.Attempt)
			if d, _ := c.q.Offer(jobOf(cb, id)); d == stages.Queued {
				if d, got, _ := c.q.Claim(id); d == stages.Admitted && got == id {
					c.jobs[cb.Ref] = id
					c.armLeaseLocked(cb.Ref, cb.Attempt, cb.LeaseUntil.Sub(now))
					continue
				}
				c.q.Cancel(id, cb.Ref)
			}
		}
		if err := c.CallbackStore.Return(ctx, cb.Ref, cb.Attempt, now); err != nil && !errors.Is(err, ErrLeaseLost) {
			return err
		}
	}
	c.backlog = true
	c.refillLocked(ctx)
	return nil
}

// Accept implements CallbackQueue: the gate admits the offer, then the
// store records it; a refused offer is ErrQueueFull. Waiting rows from
// before a restart go first; if they fill the queue, the offer is refused
// and counted.
func (c *localCallbacks) Accept(ctx context.Context, cb Callback) (Callback, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refillLocked(ctx)
	id := jobID(cb.Ref, 0)
	d, err := c.q.Offer(jobOf(cb, id))
	if err != nil {
		return Callback{}, false, err
	}
	if d != stages.Queued {
		return Callback{}, false, ErrQueueFull
	}
	got, created, err := c.CallbackStore.Accept(ctx, cb)
	if err != nil || !created {
		c.q.Cancel(id, cb.Ref)
		return got, created, err
	}
	c.jobs[cb.Ref] = id
	return got, true, nil
}

// Next implements CallbackQueue: the gate's claim, then the store's.
func (c *localCallbacks) Next(ctx context.Context, operator, ref string, now time.Time) (Callback, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.refillLocked(ctx)
	for {
		want := ""
		if ref != "" {
			var err error
			if want, err = c.wantLocked(ctx, ref); err != nil {
				return Callback{}, err
			}
		}
		d, id, err := c.q.Claim(want)
		if err != nil {
			return Callback{}, err
		}
		if err := claimRefusal(d, ref); err != nil {
			return Callback{}, err
		}
		got, _, _ := strings.Cut(id, "/")
		cb, err := c.CallbackStore.Claim(ctx, got, operator, now, now.Add(c.lease))
		if err != nil {
			// Claimed or finished by another process on the same file,
			// or the store failed: drop it from the gate; a pending row
			// comes back by refill.
			c.dropLocked(got)
			if (errors.Is(err, ErrNotLive) || errors.Is(err, ErrNotFound)) && ref == "" {
				continue
			}
			return Callback{}, err
		}
		c.armLeaseLocked(got, cb.Attempt, c.lease)
		return cb, nil
	}
}

// claimRefusal is the error of a gate's claim that admitted nothing (nil
// when it admitted), for a claim of the head or of ref.
func claimRefusal(d stages.Disposition, ref string) error {
	switch d {
	case stages.Admitted:
		return nil
	case claim.Busy:
		return ErrSlotsBusy
	case stages.Queued:
		return ErrNotNext
	case claim.Empty:
		return ErrNoneWaiting
	}
	if ref != "" { // ref no longer waits (claimed, expired), or the gate is closed
		return fmt.Errorf("%w: %q is %v", ErrNotLive, ref, d)
	}
	return ErrNoneWaiting
}

// wantLocked is the gate's job of ref for a claim of it: one that is
// pending in the store but not yet in the gate (the backlog) waits behind
// every callback the gate holds.
func (c *localCallbacks) wantLocked(ctx context.Context, ref string) (string, error) {
	if id, ok := c.jobs[ref]; ok {
		return id, nil
	}
	cb, err := c.CallbackStore.Get(ctx, ref)
	switch {
	case err != nil:
		return "", err
	case cb.Status == StatusPending:
		return "", ErrNotNext
	}
	return "", fmt.Errorf("%w: %q is %s", ErrNotLive, ref, cb.Status)
}

// Finish implements CallbackQueue: the store's record, then the gate's
// lease.
func (c *localCallbacks) Finish(ctx context.Context, ref string, attempt int, to Status, note string, now time.Time) (Callback, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cb, err := c.CallbackStore.Finish(ctx, ref, attempt, to, note, now)
	if err != nil {
		return Callback{}, err
	}
	if l, ok := c.leases[ref]; ok {
		l.t.Stop()
		delete(c.leases, ref)
	}
	if id, ok := c.jobs[ref]; ok {
		if st, _ := c.q.Gate().State(id); st == claim.Active && to == StatusFailed {
			c.q.ReleaseFailed(id, ref) // counted failed, as the fleet's queue counts it
		} else if st == claim.Active {
			c.q.Release(id, ref)
		} else {
			c.q.Cancel(id, ref)
		}
		delete(c.jobs, ref)
	}
	c.refillLocked(ctx)
	return cb, nil
}

// Sweep implements CallbackQueue: the gate's timer and the leases' timers
// run the timeouts.
func (c *localCallbacks) Sweep(context.Context, time.Time) error { return nil }

// Expire implements CallbackStore through the gate, which decides expiry
// and counts it so: a waiting callback that is due expires by the gate
// now (its timer may not have run yet: timers that fall due together run
// in any order). One that is not due is expired by hand, as the store
// would, and leaves the gate counted cancelled: the gate did not decide it.
func (c *localCallbacks) Expire(ctx context.Context, ref string, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.refillLocked(ctx)
	id, waits := c.jobs[ref]
	if !waits {
		return c.CallbackStore.Expire(ctx, ref, now) // claimed, finished, or not in the gate yet
	}
	c.q.ExpireDue()
	if c.jobs[ref] != id {
		return nil // expired by the gate just now
	}
	if st, _ := c.q.Gate().State(id); st != stages.Queued {
		return c.CallbackStore.Expire(ctx, ref, now) // claimed: not live for Expire
	}
	if err := c.CallbackStore.Expire(ctx, ref, now); err != nil {
		return err
	}
	c.dropLocked(ref)
	return nil
}

// Return implements CallbackStore through the gate: the claim's slot is
// free at once and the callback waits again, behind those waiting now.
func (c *localCallbacks) Return(ctx context.Context, ref string, attempt int, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.CallbackStore.Return(ctx, ref, attempt, now); err != nil {
		return err
	}
	if l, ok := c.leases[ref]; ok {
		l.t.Stop()
		delete(c.leases, ref)
	}
	c.dropLocked(ref)
	c.refillLocked(ctx)
	return nil
}

// Refuse implements CallbackQueue.
func (c *localCallbacks) Refuse(_ context.Context, d stages.Disposition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.Refuse(d)
}

// Snapshot implements CallbackQueue.
func (c *localCallbacks) Snapshot(context.Context, time.Time) (stages.Snapshot, error) {
	return c.q.Snapshot(), nil
}

// Room implements CallbackQueue: room in the gate, and no stored callback
// waiting for it.
func (c *localCallbacks) Room() bool {
	c.mu.Lock()
	backlog := c.backlog
	c.mu.Unlock()
	return c.q.Room() && !backlog
}

// View implements CallbackQueue: the gate itself, with its waiting list.
func (c *localCallbacks) View() stages.View { return c.q.Gate() }

// LeasesReturned counts claims whose lease ran out.
func (c *localCallbacks) LeasesReturned() uint64 { return c.leasesReturned.Load() }

// Stop implements CallbackQueue: admission closes, the timers end.
// Accepted callbacks stay in the store for the next start.
func (c *localCallbacks) Stop() {
	c.q.Gate().Close()
	c.mu.Lock()
	c.stopped = true
	for k, l := range c.leases {
		l.t.Stop()
		delete(c.leases, k)
	}
	c.mu.Unlock()
	c.stop()
	c.q.Stop()
}

// refillLocked offers pending callbacks that are not in the gate yet,
// oldest first, while the queue has room. Under mu.
func (c *localCallbacks) refillLocked(ctx context.Context) {
	if !c.backlog {
		return
	}
	pending, err := c.CallbackStore.List(ctx, 0, StatusPending)
	if err != nil {
		c.log.Error("callback refill", "err", err)
		return
	}
	c.backlog = false
	for _, cb := range pending {
		if _, ok := c.jobs[cb.Ref]; ok {
			continue
		}
		if !c.q.Room() {
			c.backlog = true
			return
		}
		id := jobID(cb.Ref, cb.Attempt)
		d, err := c.q.Offer(jobOf(cb, id))
		switch {
		case err != nil:
			c.log.Error("callback refill", "ticket", cb.Ref, "err", err)
		case d == stages.Queued:
			c.jobs[cb.Ref] = id
		case d == stages.Expired:
			c.expireOneLocked(cb.Ref)
		default: // closed or full: leave it pending in the store
			c.backlog = true
			return
		}
	}
}

// dropLocked takes ref's job out of the gate, freeing its slot or place,
// and marks the store as holding rows the gate may lack. Under mu.
func (c *localCallbacks) dropLocked(ref string) {
	if id, ok := c.jobs[ref]; ok {
		c.q.Cancel(id, ref)
		delete(c.jobs, ref)
	}
	c.backlog = true
}

// jobOf is the gate's job of cb's claim attempt id.
func jobOf(cb Callback, id string) stages.Job {
	return stages.Job{ID: id, Owner: cb.Ref, Born: cb.Accepted, Tenant: cb.Tenant}
}

func (c *localCallbacks) expireLocked(ids []string) {
	for _, id := range ids {
		ref, _, _ := strings.Cut(id, "/")
		if c.jobs[ref] == id {
			c.expireOneLocked(ref)
		}
	}
}

func (c *localCallbacks) expireOneLocked(ref string) {
	delete(c.jobs, ref)
	if err := c.CallbackStore.Expire(c.ctx, ref, c.clock.Now()); err != nil {
		c.log.Error("callback expire", "ticket", ref, "err", err)
		return
	}
	c.log.Warn("callback expired unclaimed", "ticket", ref)
}

// claimLease is the timer of one claim attempt made through this process.
type claimLease struct {
	t       clock.Timer
	attempt int
}

// armLeaseLocked starts the lease timer of a claim. Under mu.
func (c *localCallbacks) armLeaseLocked(ref string, attempt int, after time.Duration) {
	if l, ok := c.leases[ref]; ok {
		l.t.Stop()
	}
	c.leases[ref] = claimLease{c.clock.AfterFunc(after, func() { c.leaseExpired(ref, attempt) }), attempt}
}

// leaseExpired returns a claim that ran out to the queue, keeping its
// original acceptance time: if that is now too old, it expires instead.
func (c *localCallbacks) leaseExpired(ref string, attempt int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leases[ref]; c.stopped || !ok || l.attempt != attempt {
		return // finished, or the timer of a claim made since
	}
	delete(c.leases, ref)
	now := c.clock.Now()
	if err := c.CallbackStore.Return(c.ctx, ref, attempt, now); errors.Is(err, ErrLeaseLost) {
		// Returned or finished by another process on the same file
		// (frontdoor callbacks): this claim's slot in the gate is free
		// all the same; a pending row comes back by refill.
		c.dropLocked(ref)
		c.refillLocked(c.ctx)
		return
	} else if err != nil {
		c.log.Error("callback lease return", "ticket", ref, "err", err)
		return
	}
	c.leasesReturned.Add(1)
	c.dropLocked(ref)
	cb, err := c.CallbackStore.Get(c.ctx, ref)
	if err != nil {
		c.log.Error("callback lease return", "ticket", ref, "err", err)
		c.backlog = true
		return
	}
	id := jobID(ref, cb.Attempt)
	d, err := c.q.Offer(jobOf(cb, id))
	switch {
	case err == nil && d == stages.Queued:
		c.jobs[ref] = id
		c.log.Warn("callback claim lease ran out; back in the queue", "ticket", ref, "attempt", attempt)
	case err == nil && d == stages.Expired:
		c.expireOneLocked(ref)
	default:
		c.backlog = true
		c.log.Warn("callback claim lease ran out; waiting for room in the queue", "ticket", ref, "disposition", d, "err", err)
	}
}
