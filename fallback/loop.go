package fallback

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The Service's rounds over its queues. The poll bounds how late an outcome
// decided by another process reaches this one when its event was missed
// (a fleet's events are best effort); the sweep runs a fleet's timeouts.
// They run on the service's clock; queueTimeout bounds one queue call as a
// context deadline, which the network stack keeps on the wall clock (a
// manual clock does not reach a socket). An in-process queue answers every
// round at once and signals every change, so that its rounds are prompt.
const (
	queuePoll    = 250 * time.Millisecond
	queueSweep   = time.Second
	queueTimeout = 2 * time.Second // one call's wait for the queue
	queueRelist  = 2 * time.Second // agents' lists are re-sent this often (ages, missed events)
)

// startRounds starts the loop that keeps this process's view of the
// queues and runs their timeouts, and the one that renews its callers'
// handoffs and its agents' claims. Both end at Close.
func (s *Service) startRounds() {
	s.wg.Go(func() { s.loop(s.ctx) })
	// Renewals have their own goroutine: a slow sweep or snapshot must not
	// let this process's callers and claims run out.
	s.wg.Go(func() {
		t := clock.NewTicker(s.clock, s.hq.TTL()/3)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
				s.keepHandoffs(s.ctx)
			}
		}
	})
}

func (s *Service) loop(ctx context.Context) {
	changed := s.hq.Watch(ctx)
	poll := clock.NewTicker(s.clock, queuePoll)
	defer poll.Stop()
	var lastSweep, lastList time.Time
	for {
		now := s.clock.Now()
		if now.Sub(lastList) >= queueRelist {
			lastList = now
			s.broadcast()
		}
		if now.Sub(lastSweep) >= queueSweep {
			lastSweep = now
			s.sweep(ctx)
		}
		s.refresh(ctx)
		s.reconcileHandoffs(ctx)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok {
				changed = nil
			}
			lastList = s.clock.Now()
			s.broadcast()
		case <-s.touches:
		case <-poll.C:
		}
	}
}

// touched wakes the loop after this process changed a queue.
func (s *Service) touched() {
	select {
	case s.touches <- struct{}{}:
	default:
	}
}

// sweep runs the queues' timeouts.
func (s *Service) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	now := s.clock.Now()
	if err := s.cq.Sweep(ctx, now); err != nil && ctx.Err() == nil {
		s.log.Warn("callback queue sweep", "err", err)
	}
	if err := s.hq.Sweep(ctx, now); err != nil && ctx.Err() == nil {
		s.log.Warn("handoff queue sweep", "err", err)
	}
	// A queue that journals what it accepted puts back what the store
	// lost (redisqueue): say so, once per loss.
	if j, ok := s.cq.(interface{ Republished() uint64 }); ok {
		if n := j.Republished(); n != s.republished {
			s.log.Warn("the callback store lost accepted callbacks; put back from this replica's journal", "put_back", n-s.republished)
			s.republished = n
		}
	}
}

// refresh reads the queues' snapshots, which a remote queue keeps for its
// Room and View. While a queue cannot be reached it has no room: an offer
// would fail.
func (s *Service) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	now := s.clock.Now()
	_, _ = s.cq.Snapshot(ctx, now)
	_, _ = s.hq.Snapshot(ctx, now)
}

// View shows the callback or the handoff stage in /v1/stages and metrics:
// the queue as it shows itself, without waiting (a fleet's by its counts,
// as last read from Redis).
func (s *Service) View(k prompt.Kind) stages.View {
	if k == prompt.KindCallback {
		return s.cq.View()
	}
	return s.hq.View()
}

// Snapshot reports the callback or the handoff stage for /v1/stages and
// metrics, without waiting: this process's stage, or a fleet's queue as
// last read from it (closed while it cannot be reached).
func (s *Service) Snapshot(k prompt.Kind) stages.Snapshot {
	sn, _ := s.View(k).Snapshot(context.Background())
	return sn
}
