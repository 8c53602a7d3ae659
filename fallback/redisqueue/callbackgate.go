package redisqueue

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// errNotHead is the callback queue's answer to a claim of a callback that
// waits behind others (CallbackGate's claims of a named ticket only).
var errNotHead = errors.New("redisqueue: callback is not the head of the queue")

// NewCallbackGate returns the callback queue called name on rdb with limits
// l as a claim gate on clock; holder names the operator its claims are
// made for. A claim's lease is lease (Config.CallbackLease): one left
// longer goes back to the queue at the next claim.
func NewCallbackGate(rdb redis.UniversalClient, name string, l stages.Limits, clock clock.Clock, holder string, lease time.Duration) *ClaimGate {
	s := NewCallbackStore(rdb, name, fallback.Config{CallbackSlots: l.Slots, CallbackQueue: l.Waiting, CallbackMaxWait: l.MaxAge, CallbackLease: lease})
	s.tenantWaiting = l.TenantWaiting
	return newClaimGate(callbackGate{s}, l, clock, holder)
}

// callbackGate is a CallbackStore's side of a ClaimGate: a job is a
// callback whose call is the owner and whose turn is the job's ID.
type callbackGate struct{ s *CallbackStore }

func (g callbackGate) enqueue(ctx context.Context, job stages.Job) (stages.Disposition, error) {
	if job.Tenant != "" {
		g.s.mu.Lock()
		g.s.tenants[job.ID] = job.Tenant
		g.s.mu.Unlock()
		defer func() {
			g.s.mu.Lock()
			delete(g.s.tenants, job.ID)
			g.s.mu.Unlock()
		}()
	}
	_, _, err := g.s.Accept(ctx, fallback.Callback{Ref: job.ID, Call: job.Owner, Turn: job.ID, Accepted: job.Born})
	if errors.Is(err, fallback.ErrQueueFull) {
		return stages.Overloaded, nil
	}
	if err != nil {
		return 0, err
	}
	return stages.Queued, nil
}

func (g callbackGate) claim(ctx context.Context, holder, want string, now time.Time) (stages.Disposition, string, int, error) {
	var c fallback.Callback
	var err error
	if want == "" {
		c, err = g.s.Next(ctx, holder, now)
	} else {
		c, err = g.s.transition(ctx, "head", want, 0, now, "", holder, now.Add(g.s.cfg.CallbackLease))
	}
	switch {
	case err == nil:
		return stages.Admitted, c.Ref, c.Attempt, nil
	case errors.Is(err, fallback.ErrSlotsBusy):
		return claim.Busy, "", 0, nil
	case errors.Is(err, fallback.ErrNoneWaiting):
		return claim.Empty, "", 0, nil
	case errors.Is(err, errNotHead):
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
	_, err := g.s.Finish(ctx, id, attempt, to, "", now)
	return err
}

func (g callbackGate) cancel(ctx context.Context, id string, now time.Time) error {
	_, err := g.s.transition(ctx, "cancel", id, 0, now, "", "", time.Time{})
	return err
}

func (g callbackGate) expire(ctx context.Context, id string, now time.Time) (bool, error) {
	err := g.s.Expire(ctx, id, now)
	if errors.Is(err, fallback.ErrNotLive) {
		return false, nil
	}
	return err == nil, err
}

func (g callbackGate) state(ctx context.Context, id string) (stages.Disposition, error) {
	c, err := g.s.Get(ctx, id)
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
	case "cancelled":
		return stages.Cancelled, nil
	}
	return stages.Completed, nil
}

// ARGV[1] prefix, [2] ticket: its place among waiting tickets, 0 if none.
var positionScript = script(`
local k = P .. 't:' .. ARGV[2]
if redis.call('HGET', k, 'status') ~= 'pending' then return 0 end
local r = redis.call('ZRANK', Q, redis.call('HGET', k, 'qm'))
if r then return r + 1 end
return 0
`)

func (g callbackGate) position(ctx context.Context, id string) (int, bool, error) {
	n, err := positionScript.Run(ctx, g.s.rdb, nil, g.s.prefix, id).Int()
	if err != nil {
		return 0, false, g.s.unavailable("position", err)
	}
	return n, n > 0, nil
}

func (g callbackGate) refuse(ctx context.Context, d stages.Disposition) error {
	return refuse(ctx, g.s.rdb, g.s.prefix, refusalField(d))
}

func (g callbackGate) snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	return g.s.Snapshot(ctx, now)
}

func (g callbackGate) ping(ctx context.Context, _ time.Time) error { return g.s.rdb.Ping(ctx).Err() }
