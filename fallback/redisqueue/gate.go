package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// ClaimGate is one of the fleet's fallback queues (the same Lua scripts
// fallback uses in fleet mode) seen as a claim.Gate, so that the
// contract every claim gate keeps (stagestest.RunClaimGate) runs on them
// against a real Redis: bounds, order, a claim of the head or of the named
// head, the tenant's share, fenced claims, expiry and the ledger are the
// queue's, kept in Redis for every replica. A job's ID is the ticket, its
// Owner the caller. NewHandoffGate makes one on a HandoffQueue,
// NewCallbackGate on a CallbackStore; NewHandoffGateOn and NewCallbackGateOn
// on any fallback.HandoffQueue or fallback.CallbackQueue, through that
// contract alone, so that the suite also runs on this process's queues
// (fallback.NewLocalHandoffQueue, fallback.NewLocalCallbackQueue).
//
// What the gate keeps in this process is what the caller's replica keeps in
// fleet mode (fallback.Service's side of a handoff): each owner's
// generation, its work's Pending, the attempt of the claims made through
// the gate, and the timer that expires waiting work at its deadline. A
// Pending learns of claims made through this gate; a claim made by another
// replica is what fallback.Service learns by its poll.
//
// Its operations are serialized in this process, each one or two scripts.
type ClaimGate struct {
	q      gateQueue
	clock  clock.Clock
	limits stages.Limits
	holder string // who the gate's claims are made for
	// kept: its owner cannot withdraw work (a booked callback): Cancel
	// fails with errors.ErrUnsupported and Rotate leaves the work waiting.
	kept bool

	mu     sync.Mutex
	owners map[string]*gateOwner
	work   map[string]*gateWork // live work submitted here, by ID
}

var _ claim.Gate = (*ClaimGate)(nil)

// gateQueue is what a ClaimGate asks of a fleet queue; each method is one
// script.
type gateQueue interface {
	// enqueue offers job: Queued, or Overloaded (the bound or the
	// tenant's share).
	enqueue(ctx context.Context, job stages.Job) (stages.Disposition, error)
	// claim admits the head, or want when it is the head, for holder:
	// Admitted with the ticket and its attempt, or why not (Busy, Empty,
	// Queued behind others, the state of want).
	claim(ctx context.Context, holder, want string, now time.Time) (stages.Disposition, string, int, error)
	// finish ends the claim attempt of id as completed or failed.
	finish(ctx context.Context, id string, attempt int, failed bool, now time.Time) error
	// cancel ends live work as cancelled (a claimed one frees its slot).
	cancel(ctx context.Context, id string, now time.Time) error
	// expire ends waiting work as expired; false when it no longer waits.
	expire(ctx context.Context, id string, now time.Time) (bool, error)
	// state is the state of work no longer waiting (0: unknown), position
	// its place while it waits.
	state(ctx context.Context, id string) (stages.Disposition, error)
	position(ctx context.Context, id string) (int, bool, error)
	// refuse counts an offer refused before the queue (Stale, Expired) in
	// its ledger.
	refuse(ctx context.Context, d stages.Disposition) error
	snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error)
	ping(ctx context.Context, now time.Time) error
}

func newClaimGate(q gateQueue, l stages.Limits, clock clock.Clock, holder string) *ClaimGate {
	return &ClaimGate{q: q, clock: clock, limits: l, holder: holder, owners: map[string]*gateOwner{}, work: map[string]*gateWork{}}
}

// gateTimeout bounds the Redis round trip of an expiry timer, which has no
// caller's context; a context deadline is on the wall clock, which the
// network stack keeps.
const gateTimeout = 2 * time.Second

type gateOwner struct {
	gen uint64
	ids map[string]struct{}
}

type gateWork struct {
	id, owner string
	deadline  time.Time
	attempt   int  // the claim's, once admitted
	cancelled bool // cancelled while claimed: its release ends it Cancelled
	timer     clock.Timer
	p         *gatePending
}

// Submit implements stages.Gate: the work joins the queue, unless its
// owner has moved past its generation (Stale) or it is past its deadline
// (Expired), the queue is full or its tenant holds its share (Overloaded).
func (g *ClaimGate) Submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	o := g.owners[job.Owner]
	if o != nil && job.Generation != o.gen {
		return nil, stages.Stale, g.q.refuse(ctx, stages.Stale)
	}
	deadline := job.Deadline
	if deadline.IsZero() {
		deadline = job.Born.Add(g.limits.MaxAge)
	}
	if deadline.Before(now) {
		return nil, stages.Expired, g.q.refuse(ctx, stages.Expired)
	}
	d, err := g.q.enqueue(ctx, job)
	if err != nil {
		return nil, stages.Closed, fmt.Errorf("%w: %w", stages.ErrUnavailable, err)
	}
	if d != stages.Queued {
		return nil, d, nil
	}
	if o == nil {
		o = &gateOwner{gen: job.Generation, ids: map[string]struct{}{}}
		g.owners[job.Owner] = o
	}
	o.ids[job.ID] = struct{}{}
	w := &gateWork{id: job.ID, owner: job.Owner, deadline: deadline, p: &gatePending{g: g, id: job.ID, done: make(chan struct{})}}
	// Expiry is strictly after the deadline (equal is still eligible).
	w.timer = g.clock.AfterFunc(deadline.Sub(now)+time.Nanosecond, func() { g.expire(job.ID) })
	g.work[job.ID] = w
	return w.p, stages.Queued, nil
}

// expire ends waiting work at its deadline, in the queue and here. A
// Redis round trip it waits for is bounded as the fleet's steps are.
func (g *ClaimGate) expire(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), gateTimeout)
	defer cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(ctx, id)
}

func (g *ClaimGate) expireLocked(ctx context.Context, id string) {
	w := g.work[id]
	if w == nil || w.p.resolvedLocked() {
		return
	}
	if ok, err := g.q.expire(ctx, id, g.clock.Now()); err != nil || !ok {
		return // claimed meanwhile, or unreachable: the queue's sweep expires it
	}
	g.endLocked(w, stages.Expired)
}

// expireDueLocked expires waiting work past its deadline whose timer has
// not run yet, so that a claim never admits it.
func (g *ClaimGate) expireDueLocked(ctx context.Context, now time.Time) {
	for id, w := range g.work {
		if !w.p.resolvedLocked() && w.deadline.Before(now) {
			g.expireLocked(ctx, id)
		}
	}
}

// endLocked resolves w's Pending as d and forgets w.
func (g *ClaimGate) endLocked(w *gateWork, d stages.Disposition) {
	w.timer.Stop()
	w.p.resolveLocked(d, g.clock.Now())
	g.forgetWorkLocked(w)
}

func (g *ClaimGate) forgetWorkLocked(w *gateWork) {
	delete(g.work, w.id)
	if o := g.owners[w.owner]; o != nil {
		delete(o.ids, w.id)
	}
}

// Claim implements claim.Gate on the queue's claim script.
func (g *ClaimGate) Claim(ctx context.Context, want string) (stages.Disposition, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	g.expireDueLocked(ctx, now)
	d, id, attempt, err := g.q.claim(ctx, g.holder, want, now)
	if err != nil {
		return stages.Closed, "", fmt.Errorf("%w: %w", stages.ErrUnavailable, err)
	}
	if d != stages.Admitted {
		return d, "", nil
	}
	if w := g.work[id]; w != nil {
		w.attempt = attempt
		w.timer.Stop()
		w.p.resolveLocked(stages.Admitted, now)
	} else {
		// Submitted by another replica: the claim is held here all the same.
		w := &gateWork{id: id, attempt: attempt, timer: noTimer{}, p: &gatePending{g: g, id: id, done: make(chan struct{})}}
		w.p.resolveLocked(stages.Admitted, now)
		g.work[id] = w
	}
	return stages.Admitted, id, nil
}

// Release implements stages.Gate: the agent's acknowledgement (Completed),
// or for work cancelled while claimed, its end as Cancelled.
func (g *ClaimGate) Release(ctx context.Context, id string) (stages.Disposition, error) {
	return g.release(ctx, id, false)
}

// ReleaseFailed implements stages.Gate: an acknowledgement counted Failed.
func (g *ClaimGate) ReleaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	return g.release(ctx, id, true)
}

func (g *ClaimGate) release(ctx context.Context, id string, failed bool) (stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.work[id]
	if w == nil || !w.p.resolvedLocked() {
		return 0, fmt.Errorf("redisqueue: release %q: no claim held here", id)
	}
	if w.cancelled {
		if err := g.q.cancel(ctx, id, g.clock.Now()); err != nil {
			return 0, err
		}
		g.forgetWorkLocked(w)
		return stages.Cancelled, nil
	}
	if err := g.q.finish(ctx, id, w.attempt, failed, g.clock.Now()); err != nil {
		return 0, err
	}
	g.forgetWorkLocked(w)
	if failed {
		return stages.Failed, nil
	}
	return stages.Completed, nil
}

// Cancel implements stages.Gate: waiting work leaves the queue; claimed
// work keeps its slot until released, as Cancelled.
func (g *ClaimGate) Cancel(ctx context.Context, id string) (stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelLocked(ctx, id)
}

func (g *ClaimGate) cancelLocked(ctx context.Context, id string) (stages.Disposition, error) {
	if g.kept {
		return 0, fmt.Errorf("redisqueue: cancel %q: the queue keeps its work: %w", id, errors.ErrUnsupported)
	}
	w := g.work[id]
	if w == nil {
		return g.q.state(ctx, id)
	}
	if w.p.resolvedLocked() { // claimed
		w.cancelled = true
		return stages.Cancelled, nil
	}
	if err := g.q.cancel(ctx, id, g.clock.Now()); err != nil {
		return 0, err
	}
	g.endLocked(w, stages.Cancelled)
	return stages.Cancelled, nil
}

// Rotate implements stages.Gate: the owner's waiting work is cancelled in
// the queue before it returns; its claimed work is cancelled and keeps its
// slot until released. A kept queue's work stays as it is.
func (g *ClaimGate) Rotate(ctx context.Context, owner string, generation uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.owners[owner]
	if o == nil {
		g.owners[owner] = &gateOwner{gen: generation, ids: map[string]struct{}{}}
		return nil
	}
	if generation <= o.gen {
		return fmt.Errorf("%w: owner %q at %d, asked %d", stages.ErrGeneration, owner, o.gen, generation)
	}
	o.gen = generation
	if g.kept {
		return nil // the owner's work outlives its generation
	}
	for id := range o.ids {
		if _, err := g.cancelLocked(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Forget implements stages.Gate.
func (g *ClaimGate) Forget(_ context.Context, owner string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.owners, owner)
	return nil
}

// Snapshot implements stages.View: the queue's counts and ledger.
func (g *ClaimGate) Snapshot(ctx context.Context) (stages.Snapshot, error) {
	sn, err := g.q.snapshot(ctx, g.clock.Now())
	sn.Limits = g.limits
	g.mu.Lock()
	sn.Owners = len(g.owners)
	g.mu.Unlock()
	return sn, err
}

// Waiting implements stages.View: a fleet's queue is shown by its counts.
func (g *ClaimGate) Waiting(context.Context) ([]stages.Waiter, error) { return nil, nil }

// Ready implements stages.Gate.
func (g *ClaimGate) Ready(ctx context.Context) error {
	return g.q.ping(ctx, g.clock.Now())
}

// Stop implements stages.Gate: the expiry timers stop; the queue's sweep
// expires what is left.
func (g *ClaimGate) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.work {
		w.timer.Stop()
	}
}

// gatePending is a Submit's stages.Pending. Under the gate's mutex it is
// resolved once.
type gatePending struct {
	g    *ClaimGate
	id   string
	done chan struct{}
	d    stages.Disposition
	at   time.Time
}

func (p *gatePending) resolvedLocked() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *gatePending) resolveLocked(d stages.Disposition, at time.Time) {
	if p.resolvedLocked() {
		return
	}
	p.d, p.at = d, at
	close(p.done)
}

// Done implements stages.Pending.
func (p *gatePending) Done() <-chan struct{} { return p.done }

// Result implements stages.Pending. d and at are written before done is
// closed, and never after.
func (p *gatePending) Result() (stages.Disposition, time.Time) {
	<-p.done
	return p.d, p.at
}

// Wait implements stages.Pending.
func (p *gatePending) Wait(ctx context.Context) (stages.Disposition, error) {
	select {
	case <-p.done:
		d, _ := p.Result()
		return d, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Position implements stages.Pending: the place in the fleet's queue.
func (p *gatePending) Position(ctx context.Context) (int, bool, error) {
	return p.g.q.position(ctx, p.id)
}

// Lost implements stages.Pending: a claim held through the gate is fenced
// by its attempt, not lost behind the holder's back.
func (p *gatePending) Lost() <-chan struct{} { return nil }

type noTimer struct{}

func (noTimer) Stop() bool { return false }
