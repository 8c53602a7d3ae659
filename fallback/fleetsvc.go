package fallback

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Fleet mode timing. The poll is the bound on how late an outcome decided
// by another process reaches this one when its event was missed (events
// are best effort); the sweep runs the fleet's timeouts. The poll, the
// sweep and the relist run on the service's clock; fleetTimeout bounds a
// Redis round trip as a context deadline, which the network stack keeps on
// the wall clock (a manual clock does not reach the socket).
const (
	fleetPoll    = 250 * time.Millisecond
	fleetSweep   = time.Second
	fleetTimeout = 2 * time.Second // one fleet step's wait for the queue
	fleetRelist  = 2 * time.Second // agents' lists are re-sent this often (ages, missed events)
)

// fleetState is what this process knows of the fleet's queues between
// polls.
type fleetState struct {
	callbackRoom atomic.Bool
	handoffRoom  atomic.Bool
	callbackSnap atomic.Pointer[stages.Snapshot]
	handoffSnap  atomic.Pointer[stages.Snapshot]
	republished  uint64 // callbacks put back after a store's loss, as last logged (fleetLoop's only)
}

// startFleet starts the loop that keeps this process's view of the fleet's
// queues and runs the fleet's timeouts, and the one that renews its
// callers' handoffs and its agents' claims. Both end at Close.
func (s *Service) startFleet() {
	s.fleet.callbackRoom.Store(true)
	s.fleet.handoffRoom.Store(true)
	s.wg.Go(func() { s.fleetLoop(s.ctx) })
	if s.hfq != nil {
		// Renewals have their own goroutine: a slow sweep or snapshot
		// must not let this process's callers and claims run out.
		s.wg.Go(func() {
			t := clock.NewTicker(s.clock, s.hfq.TTL()/3)
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
}

func (s *Service) fleetLoop(ctx context.Context) {
	changed := s.hos.watch(ctx)
	poll := clock.NewTicker(s.clock, fleetPoll)
	defer poll.Stop()
	var lastSweep, lastList time.Time
	for {
		now := s.clock.Now()
		if s.hfq != nil && now.Sub(lastList) >= fleetRelist {
			lastList = now
			s.broadcast()
		}
		if now.Sub(lastSweep) >= fleetSweep {
			lastSweep = now
			s.fleetSweep(ctx)
		}
		s.refreshFleet(ctx)
		s.hos.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok {
				changed = nil
			}
			lastList = s.clock.Now()
			s.broadcast()
		case <-poll.C:
		}
	}
}

func (s *Service) fleetSweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	now := s.clock.Now()
	s.cbs.sweep(ctx, now)
	s.hos.sweep(ctx, now)
}

// refreshFleet updates the offers' room and the stages' snapshots. While
// the queue cannot be reached there is no room: an offer would fail.
func (s *Service) refreshFleet(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	now := s.clock.Now()
	s.cbs.refresh(ctx, now)
	s.hos.refresh(ctx, now)
}

// storeSnapshot keeps sn, or while the queue is away the last known
// inventory, shown closed.
func storeSnapshot(p *atomic.Pointer[stages.Snapshot], sn stages.Snapshot, err error) {
	if err != nil {
		if last := p.Load(); last != nil {
			sn = *last
		}
		sn.Closed = true
	}
	p.Store(&sn)
}

// View shows the callback or the handoff stage in /v1/stages and metrics:
// this process's controller with its waiting list, or in fleet mode the
// fleet's queue by its counts, as last read from Redis.
func (s *Service) View(k prompt.Kind) stages.View {
	if k == prompt.KindCallback {
		return s.cbs.view()
	}
	return s.hos.view()
}

// Snapshot reports the callback or the handoff stage for /v1/stages and
// metrics: this process's stage, or in fleet mode the fleet's queue as last
// read from it (closed while it cannot be reached).
func (s *Service) Snapshot(k prompt.Kind) stages.Snapshot {
	if k == prompt.KindCallback {
		return s.cbs.snapshot()
	}
	return s.hos.snapshot()
}

// Fleet reports whether the callback and handoff queues are shared by a
// fleet (their Snapshot is then the fleet's).
func (s *Service) Fleet() bool { return s.cq != nil || s.hfq != nil }
