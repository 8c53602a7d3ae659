package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// NewCallbackGate returns the callback queue called name on rdb with limits
// l as a claim gate on clock; holder names the operator its claims are
// made for. A claim's lease is lease (Config.CallbackLease): one left
// longer goes back to the queue at the next claim.
func NewCallbackGate(rdb redis.UniversalClient, name string, l stages.Limits, clock clock.Clock, holder string, lease time.Duration) *ClaimGate {
	s := NewCallbackStore(rdb, name, fallback.Config{CallbackSlots: l.Slots, CallbackQueue: l.Waiting, CallbackMaxWait: l.MaxAge, CallbackLease: lease})
	s.tenantWaiting = l.TenantWaiting
	return NewCallbackGateOn(s, l, clock, holder)
}

// NewCallbackGateOn returns q, any fallback.CallbackQueue with limits l, as
// a claim gate on clock, through the contract fallback.Service asks it by
// and nothing else: so that stagestest.RunClaimGate checks that contract on
// the fleet's queue (NewCallbackGate) and on this process's
// (fallback.NewLocalCallbackQueue over the SQLite store) alike. A job is a
// callback: its ID the ticket and the turn, its Owner the call. Its
// deadline is the queue's, Born plus l.MaxAge (a callback records no
// other).
//
// A booked callback is kept: the caller was told it will be called back,
// so neither a new generation of its call nor its owner withdraws it
// (Cancel fails with errors.ErrUnsupported; stagestest.Kept); it leaves
// the queue by a claim or at its deadline.
func NewCallbackGateOn(q fallback.CallbackQueue, l stages.Limits, clock clock.Clock, holder string) *ClaimGate {
	g := newClaimGate(callbackGate{q}, l, clock, holder)
	g.kept = true
	return g
}

// callbackGate is a CallbackQueue's side of a ClaimGate.
type callbackGate struct{ q fallback.CallbackQueue }

func (g callbackGate) enqueue(ctx context.Context, job stages.Job) (stages.Disposition, error) {
	_, created, err := g.q.Accept(ctx, fallback.Callback{Ref: job.ID, Call: job.Owner, Turn: job.ID, Accepted: job.Born, Tenant: job.Tenant})
	switch {
	case errors.Is(err, fallback.ErrQueueFull):
		return stages.Overloaded, nil
	case err != nil:
		return 0, err
	case !created:
		return 0, fmt.Errorf("redisqueue: callback %q accepted before", job.ID)
	}
	return stages.Queued, nil
}

func (g callbackGate) claim(ctx context.Context, holder, want string, now time.Time) (stages.Disposition, string, int, error) {
	c, err := g.q.Next(ctx, holder, want, now)
	switch {
	case err == nil:
		return stages.Admitted, c.Ref, c.Attempt, nil
	case errors.Is(err, fallback.ErrSlotsBusy):
		return claim.Busy, "", 0, nil
	case errors.Is(err, fallback.ErrNoneWaiting):
		return claim.Empty, "", 0, nil
	case errors.Is(err, fallback.ErrNotNext):
		return stages.Queued, "", 0, nil
	case errors.Is(err, fallback.ErrNotFound), errors.Is(err, fallback.ErrNotLive):
		d, err := g.state(ctx, want)
		return d, "", 0, err
	}
	return 0, "", 0, err
}

func (g callbackGate) finish(ctx context.Context, id string, attempt int, failed bool, now time.Time) error {
	to := fallback.StatusCompleted
	if failed {
		to = fallback.StatusFailed
	}
	_, err := g.q.Finish(ctx, id, attempt, to, "", now)
	return err
}

// cancel is never asked of a kept queue (ClaimGate.kept).
func (g callbackGate) cancel(context.Context, string, time.Time) error {
	return fmt.Errorf("redisqueue: cancel a callback: %w", errors.ErrUnsupported)
}

// expire ends a waiting callback at its deadline: the queue expires it
// now, or had already (its own timer or sweep decided first).
func (g callbackGate) expire(ctx context.Context, id string, now time.Time) (bool, error) {
	err := g.q.Expire(ctx, id, now)
	if errors.Is(err, fallback.ErrNotLive) {
		d, err := g.state(ctx, id)
		return d == stages.Expired, err
	}
	return err == nil, err
}

func (g callbackGate) state(ctx context.Context, id string) (stages.Disposition, error) {
	c, err := g.q.Get(ctx, id)
	if errors.Is(err, fallback.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	switch c.Status {
	case fallback.StatusPending:
		return stages.Queued, nil
	case fallback.StatusClaimed:
		return claim.Active, nil
	case fallback.StatusExpired:
		return stages.Expired, nil
	case fallback.StatusFailed:
		return stages.Failed, nil
	}
	return stages.Completed, nil
}

// position is id's place among the waiting callbacks as the queue lists
// them, oldest accepted first: the queue's order, but for a claim this
// process's gate took back, which waits behind the others
// (fallback.CallbackQueue.Sweep). One List per call: a view, not a path
// any claim takes.
func (g callbackGate) position(ctx context.Context, id string) (int, bool, error) {
	waiting, err := g.q.List(ctx, 0, fallback.StatusPending)
	if err != nil {
		return 0, false, err
	}
	for i, c := range waiting {
		if c.Ref == id {
			return i + 1, true, nil
		}
	}
	return 0, false, nil
}

func (g callbackGate) refuse(ctx context.Context, d stages.Disposition) error {
	return g.q.Refuse(ctx, d)
}

func (g callbackGate) snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	return g.q.Snapshot(ctx, now)
}

// ping reads the queue: a queue that answers can decide admission.
func (g callbackGate) ping(ctx context.Context, now time.Time) error {
	_, err := g.q.Snapshot(ctx, now)
	return err
}
