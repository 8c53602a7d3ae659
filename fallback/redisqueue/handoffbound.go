package redisqueue

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
)

// HandoffBound is a fallback.HandoffBound on a redisstage Dispatcher: each
// live handoff holds one lease of a fleet-wide stage whose Slots are the
// fleet's bound, renewed while it lives and released when it resolves. A
// replica that dies keeps its places only until their TTL runs out, as any
// lease (docs/FLEET.md). Only the count is fleet-wide: each handoff is still
// queued, ordered and offered to agents by the replica holding its call.
type HandoffBound struct {
	d       *redisstage.Dispatcher
	timeout time.Duration

	ctx    context.Context // ends at Stop; owns the releases
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ fallback.HandoffBound = (*HandoffBound)(nil)

// NewHandoffBound reserves through d, waiting at most timeout for Redis per
// step. The stage behind d should have Slots set to the fleet's bound; its
// Waiting is not used (a reservation never waits).
func NewHandoffBound(d *redisstage.Dispatcher, timeout time.Duration) *HandoffBound {
	ctx, cancel := context.WithCancel(context.Background())
	return &HandoffBound{d: d, timeout: timeout, ctx: ctx, cancel: cancel}
}

// Reserve implements fallback.HandoffBound: Admitted when a place was free
// at once, Overloaded when the fleet is at its bound, Closed with an error
// wrapping stages.ErrUnavailable when Redis cannot be reached.
func (b *HandoffBound) Reserve(ctx context.Context, ticket string) (stages.Disposition, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	// Each ticket is its own owner, so that no ordering history is shared.
	if err := b.d.Rotate(ctx, ticket, 1); err != nil {
		return stages.Closed, err
	}
	t, d, err := b.d.SubmitTicket(ctx, stages.Job{ID: ticket, Owner: ticket, Generation: 1, Born: time.Now()})
	if err != nil || d != stages.Queued {
		_ = b.d.Forget(ctx, ticket)
		if d == 0 {
			d = stages.Closed
		}
		return d, err
	}
	select {
	case <-t.Done():
		if r, _ := t.Result(); r == stages.Admitted {
			return stages.Admitted, nil
		}
	default:
	}
	// Not admitted in the offer's own script: every place is taken.
	// Withdraw it; if it was admitted meanwhile, give the place back.
	_, _ = b.d.Cancel(ctx, ticket)
	select {
	case <-t.Done():
		if r, _ := t.Result(); r == stages.Admitted {
			_, _ = b.d.Release(ctx, ticket)
		}
	default:
	}
	_ = b.d.Forget(ctx, ticket)
	return stages.Overloaded, nil
}

// Free implements fallback.HandoffBound: the release runs in the
// background (the caller holds the fallback service's lock). If Redis
// cannot be reached the place comes back when the lease's TTL runs out.
func (b *HandoffBound) Free(ticket string) {
	b.wg.Go(func() {
		ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
		defer cancel()
		_, _ = b.d.Release(ctx, ticket)
		_ = b.d.Forget(ctx, ticket)
	})
}

// Stop waits for releases under way (each bounded by the timeout), then
// stops the dispatcher. Call it after the fallback service is closed.
func (b *HandoffBound) Stop() {
	b.wg.Wait()
	b.cancel()
	b.d.Stop()
}
