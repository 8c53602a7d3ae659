package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
)

// HandoffGate is the fleet's handoff queue (HandoffQueue, the same Lua
// scripts fallback uses in fleet mode) seen as a stages.ClaimGate, so that
// the contract every claim gate keeps (stagestest.RunClaimGate) runs on
// them against a real Redis: bounds, order, a claim of the head or of the
// named head, the tenant's share, fenced claims, expiry and the ledger are
// the queue's, kept in Redis for every replica. A job's ID is the handoff's
// ticket, its Owner the caller.
//
// What the gate keeps in this process is what the caller's replica keeps in
// fleet mode (fallback.Service's side of a handoff): each owner's
// generation, its work's Pending, the attempt of the claims made through
// the gate, and the timer that expires a waiting handoff at its deadline.
// A Pending learns of claims made through this gate; a claim made by
// another replica is what fallback.Service learns by its poll.
type HandoffGate struct {
	q      *HandoffQueue
	clock  stages.Clock
	limits stages.Limits
	holder string // who the gate's claims are made for

	mu     sync.Mutex
	owners map[string]*gateOwner
	work   map[string]*gateWork // live work submitted here, by ID
}

var _ stages.ClaimGate = (*HandoffGate)(nil)

type gateOwner struct {
	gen uint64
	ids map[string]struct{}
}

type gateWork struct {
	id, owner string
	deadline  time.Time
	attempt   int  // the claim's, once admitted
	cancelled bool // cancelled while claimed: its release ends it Cancelled
	timer     stages.Timer
	p         *gatePending
}

// NewHandoffGate returns the handoff queue called name on rdb with limits
// l as a claim gate on clock; holder names the claims it makes. ttl is the
// queue's liveness TTL (NewHandoffQueue).
func NewHandoffGate(rdb redis.UniversalClient, name string, l stages.Limits, clock stages.Clock, holder string, ttl time.Duration) *HandoffGate {
	cfg := fallback.Config{HandoffSlots: l.Slots, HandoffQueue: l.Waiting, HandoffMaxWait: l.MaxAge}
	q := NewHandoffQueue(rdb, name, cfg, ttl)
	q.tenantWaiting = l.TenantWaiting
	return &HandoffGate{q: q, clock: clock, limits: l, holder: holder, owners: map[string]*gateOwner{}, work: map[string]*gateWork{}}
}

// Queue returns the HandoffQueue the gate runs on.
func (g *HandoffGate) Queue() *HandoffQueue { return g.q }

// ARGV[1] prefix, [2] and [3] the ledger's refusal fields: a refusal the
// gate decides before the queue (a stale generation, work past its
// deadline) is counted in the queue's ledger all the same.
var refuseHandoff = handoffScript(`
count('offered')
count(ARGV[2])
return 1
`)

func (g *HandoffGate) refuse(ctx context.Context, field string) error {
	if err := refuseHandoff.Run(ctx, g.q.rdb, nil, g.q.prefix, field).Err(); err != nil {
		return g.q.unavailable("refuse", err)
	}
	return nil
}

// Submit implements stages.Gate: the handoff joins the queue, unless its
// owner has moved past its generation (Stale) or it is past its deadline
// (Expired), the queue is full or its tenant holds its share (Overloaded).
func (g *HandoffGate) Submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	o := g.owners[job.Owner]
	if o != nil && job.Generation != o.gen {
		return nil, stages.Stale, g.refuse(ctx, "refused_stale")
	}
	deadline := job.Deadline
	if deadline.IsZero() {
		deadline = job.Born.Add(g.limits.MaxAge)
	}
	if deadline.Before(now) {
		return nil, stages.Expired, g.refuse(ctx, "refused_expired")
	}
	_, d, err := g.q.Enqueue(ctx, fallback.HandoffEntry{Ref: job.ID, Call: job.Owner, Born: job.Born, Tenant: job.Tenant})
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

// expire ends waiting work at its deadline, in the queue and here.
func (g *HandoffGate) expire(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(context.Background(), id)
}

func (g *HandoffGate) expireLocked(ctx context.Context, id string) {
	w := g.work[id]
	if w == nil || w.p.resolvedLocked() {
		return
	}
	prev, err := g.q.Resolve(ctx, id, fallback.HandoffExpired)
	if err != nil || prev.State != fallback.HandoffWaiting {
		return // claimed meanwhile, or unreachable: the queue's sweep expires it
	}
	g.endLocked(w, stages.Expired)
}

// expireDueLocked expires waiting work past its deadline whose timer has
// not run yet, so that a claim never admits it.
func (g *HandoffGate) expireDueLocked(ctx context.Context, now time.Time) {
	for id, w := range g.work {
		if !w.p.resolvedLocked() && w.deadline.Before(now) {
			g.expireLocked(ctx, id)
		}
	}
}

// endLocked resolves w's Pending as d and forgets w.
func (g *HandoffGate) endLocked(w *gateWork, d stages.Disposition) {
	w.timer.Stop()
	w.p.resolveLocked(d, g.clock.Now())
	g.forgetWorkLocked(w)
}

func (g *HandoffGate) forgetWorkLocked(w *gateWork) {
	delete(g.work, w.id)
	if o := g.owners[w.owner]; o != nil {
		delete(o.ids, w.id)
	}
}

// Claim implements stages.ClaimGate on the queue's claim script.
func (g *HandoffGate) Claim(ctx context.Context, want string) (stages.Disposition, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	g.expireDueLocked(ctx, now)
	e, err := g.q.Claim(ctx, g.holder, want, now)
	switch {
	case err == nil:
	case errors.Is(err, fallback.ErrSlotsBusy):
		return stages.Busy, "", nil
	case errors.Is(err, fallback.ErrHandoffNotNext):
		return stages.Queued, "", nil
	case errors.Is(err, fallback.ErrHandoffTaken):
		return stages.Active, "", nil
	case errors.Is(err, fallback.ErrHandoffUnknown) && want == "":
		return stages.Empty, "", nil
	case errors.Is(err, fallback.ErrHandoffUnknown):
		return g.stateLocked(ctx, want)
	default:
		return stages.Closed, "", fmt.Errorf("%w: %w", stages.ErrUnavailable, err)
	}
	if w := g.work[e.Ref]; w != nil {
		w.attempt = e.Attempt
		w.timer.Stop()
		w.p.resolveLocked(stages.Admitted, now)
	} else {
		// Submitted by another replica: the claim is held here all the same.
		g.work[e.Ref] = &gateWork{id: e.Ref, attempt: e.Attempt, timer: noTimer{}, p: &gatePending{g: g, id: e.Ref, done: closed()}}
	}
	return stages.Admitted, e.Ref, nil
}

// stateLocked is the state of work no longer waiting, as the queue keeps
// its record: 0 when it has none.
func (g *HandoffGate) stateLocked(ctx context.Context, id string) (stages.Disposition, string, error) {
	es, err := g.q.Get(ctx, []string{id})
	if err != nil {
		return stages.Closed, "", fmt.Errorf("%w: %w", stages.ErrUnavailable, err)
	}
	if len(es) == 0 {
		return 0, "", nil
	}
	if es[0].State == "failed" {
		return stages.Failed, "", nil
	}
	return es[0].State.Disposition(), "", nil
}

// Release implements stages.Gate: the agent's acknowledgement (Completed),
// or for work cancelled while claimed, its end as Cancelled.
func (g *HandoffGate) Release(ctx context.Context, id string) (stages.Disposition, error) {
	return g.release(ctx, id, "ack")
}

// ReleaseFailed implements stages.Gate: an acknowledgement counted Failed.
func (g *HandoffGate) ReleaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	return g.release(ctx, id, "fail")
}

func (g *HandoffGate) release(ctx context.Context, id, op string) (stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.work[id]
	if w == nil || !w.p.resolvedLocked() {
		return 0, fmt.Errorf("redisqueue: release %q: no claim held here", id)
	}
	if w.cancelled {
		if _, err := g.q.Resolve(ctx, id, fallback.HandoffCancelled); err != nil {
			return 0, err
		}
		g.forgetWorkLocked(w)
		return stages.Cancelled, nil
	}
	if _, _, err := g.q.settle(ctx, op, id, w.attempt, g.clock.Now()); err != nil {
		return 0, err
	}
	g.forgetWorkLocked(w)
	if op == "fail" {
		return stages.Failed, nil
	}
	return stages.Completed, nil
}

// Cancel implements stages.Gate: waiting work leaves the queue; claimed
// work keeps its slot until released, as Cancelled.
func (g *HandoffGate) Cancel(ctx context.Context, id string) (stages.Disposition, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelLocked(ctx, id)
}

func (g *HandoffGate) cancelLocked(ctx context.Context, id string) (stages.Disposition, error) {
	w := g.work[id]
	if w == nil {
		d, _, err := g.stateLocked(ctx, id)
		return d, err
	}
	if w.p.resolvedLocked() { // claimed
		w.cancelled = true
		return stages.Cancelled, nil
	}
	if _, err := g.q.Resolve(ctx, id, fallback.HandoffCancelled); err != nil {
		return 0, err
	}
	g.endLocked(w, stages.Cancelled)
	return stages.Cancelled, nil
}

// Rotate implements stages.Gate: the owner's waiting work is cancelled in
// the queue before it returns; its claimed work is cancelled and keeps its
// slot until released.
func (g *HandoffGate) Rotate(ctx context.Context, owner string, generation uint64) error {
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
	for id := range o.ids {
		if _, err := g.cancelLocked(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Forget implements stages.Gate.
func (g *HandoffGate) Forget(_ context.Context, owner string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.owners, owner)
	return nil
}

// Snapshot implements stages.View: the queue's counts and ledger.
func (g *HandoffGate) Snapshot(ctx context.Context) (stages.Snapshot, error) {
	sn, err := g.q.Snapshot(ctx, g.clock.Now())
	sn.Limits = g.limits
	g.mu.Lock()
	sn.Owners = len(g.owners)
	g.mu.Unlock()
	return sn, err
}

// Waiting implements stages.View: a fleet's queue is shown by its counts.
func (g *HandoffGate) Waiting(context.Context) ([]stages.Waiter, error) { return nil, nil }

// Ready implements stages.Gate.
func (g *HandoffGate) Ready(ctx context.Context) error {
	if err := g.q.rdb.Ping(ctx).Err(); err != nil {
		return g.q.unavailable("ping", err)
	}
	return nil
}

// Stop implements stages.Gate: the expiry timers stop; the queue's sweep
// expires what is left.
func (g *HandoffGate) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.work {
		w.timer.Stop()
	}
}

// gatePending is a Submit's stages.Pending. Under the gate's mutex it is
// resolved once.
type gatePending struct {
	g    *HandoffGate
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

// Result implements stages.Pending.
func (p *gatePending) Result() (stages.Disposition, time.Time) {
	<-p.done
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
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
	es, err := p.g.q.Get(ctx, []string{p.id})
	if err != nil {
		return 0, false, err
	}
	if len(es) == 0 || es[0].Position == 0 {
		return 0, false, nil
	}
	return es[0].Position, true, nil
}

// Lost implements stages.Pending: a claim held through the gate is fenced
// by its attempt, not lost behind the holder's back.
func (p *gatePending) Lost() <-chan struct{} { return nil }

type noTimer struct{}

func (noTimer) Stop() bool { return false }

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
