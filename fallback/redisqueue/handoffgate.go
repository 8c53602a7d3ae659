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

// NewHandoffGate returns the handoff queue called name on rdb with limits
// l as a claim gate on clock; holder names the agent its claims are made
// for, ttl is the queue's liveness TTL (NewHandoffQueue).
func NewHandoffGate(rdb redis.UniversalClient, name string, l stages.Limits, clock clock.Clock, holder string, ttl time.Duration) *ClaimGate {
	q := NewHandoffQueue(rdb, name, fallback.Config{HandoffSlots: l.Slots, HandoffQueue: l.Waiting, HandoffMaxWait: l.MaxAge}, ttl)
	q.tenantWaiting = l.TenantWaiting
	return NewHandoffGateOn(q, l, clock, holder)
}

// NewHandoffGateOn returns q, any fallback.HandoffQueue with limits l, as a
// claim gate on clock, through the contract fallback.Service asks it by
// and nothing else: so that stagestest.RunClaimGate checks that contract
// on the fleet's queue (NewHandoffGate) and on this process's
// (fallback.NewLocalHandoffQueue) alike.
func NewHandoffGateOn(q fallback.HandoffQueue, l stages.Limits, clock clock.Clock, holder string) *ClaimGate {
	return newClaimGate(handoffGate{q}, l, clock, holder)
}

// handoffGate is a HandoffQueue's side of a ClaimGate.
type handoffGate struct{ q fallback.HandoffQueue }

// ARGV[1] prefix, [2] the ledger's refusal field: a refusal the gate
// decides before the queue (a stale generation, work past its deadline) is
// counted in the queue's ledger all the same.
var refuseScript = script(`
count('offered')
count(ARGV[2])
return 1
`)

func refuse(ctx context.Context, rdb redis.UniversalClient, prefix, field string) error {
	if err := refuseScript.Run(ctx, rdb, nil, prefix, field).Err(); err != nil {
		return fmt.Errorf("%w: refuse: %w", ErrUnavailable, err)
	}
	return nil
}

// refusalField is the ledger's field of a refusal before the queue.
func refusalField(d stages.Disposition) string {
	if d == stages.Stale {
		return "refused_stale"
	}
	return "refused_expired"
}

func (g handoffGate) enqueue(ctx context.Context, job stages.Job) (stages.Disposition, error) {
	_, d, err := g.q.Enqueue(ctx, fallback.HandoffEntry{Ref: job.ID, Call: job.Owner, Born: job.Born, Tenant: job.Tenant})
	return d, err
}

func (g handoffGate) claim(ctx context.Context, holder, want string, now time.Time) (stages.Disposition, string, int, error) {
	e, err := g.q.Claim(ctx, holder, want, now)
	switch {
	case err == nil:
		return stages.Admitted, e.Ref, e.Attempt, nil
	case errors.Is(err, fallback.ErrSlotsBusy):
		return claim.Busy, "", 0, nil
	case errors.Is(err, fallback.ErrHandoffNotNext):
		return stages.Queued, "", 0, nil
	case errors.Is(err, fallback.ErrHandoffTaken):
		return claim.Active, "", 0, nil
	case errors.Is(err, fallback.ErrHandoffUnknown) && want == "":
		return claim.Empty, "", 0, nil
	case errors.Is(err, fallback.ErrHandoffUnknown):
		d, err := g.state(ctx, want)
		return d, "", 0, err
	}
	return 0, "", 0, err
}

func (g handoffGate) finish(ctx context.Context, id string, attempt int, failed bool, now time.Time) error {
	var err error
	if failed {
		_, err = g.q.Fail(ctx, id, attempt, now)
	} else {
		_, err = g.q.Ack(ctx, id, attempt, now)
	}
	return err
}

func (g handoffGate) cancel(ctx context.Context, id string, _ time.Time) error {
	_, err := g.q.Resolve(ctx, id, fallback.HandoffCancelled)
	return err
}

// expire ends waiting work at its deadline: the queue expires it now, or
// had already (its own timer or sweep decided first).
func (g handoffGate) expire(ctx context.Context, id string, _ time.Time) (bool, error) {
	prev, err := g.q.Resolve(ctx, id, fallback.HandoffExpired)
	return err == nil && (prev.State == fallback.HandoffWaiting || prev.State == fallback.HandoffExpired), err
}

func (g handoffGate) state(ctx context.Context, id string) (stages.Disposition, error) {
	es, err := g.q.Get(ctx, []string{id})
	switch {
	case err != nil:
		return 0, err
	case len(es) == 0:
		return 0, nil
	}
	return es[0].State.Disposition(), nil
}

func (g handoffGate) position(ctx context.Context, id string) (int, bool, error) {
	es, err := g.q.Get(ctx, []string{id})
	if err != nil || len(es) == 0 || es[0].Position == 0 {
		return 0, false, err
	}
	return es[0].Position, true, nil
}

func (g handoffGate) refuse(ctx context.Context, d stages.Disposition) error {
	return g.q.Refuse(ctx, d)
}

func (g handoffGate) snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	return g.q.Snapshot(ctx, now)
}

// ping reads the queue: a queue that answers can decide admission.
func (g handoffGate) ping(ctx context.Context, now time.Time) error {
	_, err := g.q.Snapshot(ctx, now)
	return err
}
