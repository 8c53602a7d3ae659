package fallback

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// handoffQueue is where the Service's handoffs wait for an agent: this
// process's handoff stage (localHandoffs, handoff.go and agents.go), or the
// fleet's queue (fleetHandoffs over a HandoffQueue, fleethandoff.go). The
// callers and agents connected to this process (Service.ho) are common to
// both; the Service chooses one at New and asks it without knowing which.
type handoffQueue interface {
	// request queues a valid handoff under ref (RequestHandoff).
	request(ctx context.Context, req HandoffRequest, ref string) (*Handoff, stages.Disposition, error)
	// position is a caller's place among waiting handoffs, 1 next.
	position(st *hstate) (int, bool)
	// cancel withdraws a caller's handoff (Handoff.Cancel).
	cancel(h *Handoff)
	// agentMessage serves an agent's claim, ack or release; agentLeft
	// gives back the claims of an agent whose connection ended.
	agentMessage(ctx context.Context, a *agent, m agentMessage)
	agentLeft(a *agent)
	// list is what agents are shown; false while the queue is away.
	list(ctx context.Context) ([]handoffView, bool)
	// room reports whether an offer now would find a waiting place.
	room() bool
	// view and snapshot show the queue as a stage.
	view() stages.View
	snapshot() stages.Snapshot
	// watch, sweep, refresh and reconcile are the fleet loop's
	// (fleetsvc.go): changes made by other processes, the queue's
	// timeouts, its room and snapshot, and outcomes decided elsewhere.
	watch(ctx context.Context) <-chan struct{}
	sweep(ctx context.Context, now time.Time)
	refresh(ctx context.Context, now time.Time)
	reconcile(ctx context.Context)
	// close ends this process's callers' handoffs in the queue.
	close()
}

var (
	_ handoffQueue = localHandoffs{}
	_ handoffQueue = fleetHandoffs{}
)

func (s localHandoffs) room() bool { return s.hq.room() }

func (s localHandoffs) view() stages.View { return s.hq.g }

func (s localHandoffs) snapshot() stages.Snapshot { return s.hq.snapshot() }

// The stage's own timer expires handoffs; nobody else decides them.
func (localHandoffs) watch(context.Context) <-chan struct{} { return nil }
func (localHandoffs) sweep(context.Context, time.Time)      {}
func (localHandoffs) refresh(context.Context, time.Time)    {}
func (localHandoffs) reconcile(context.Context)             {}
func (localHandoffs) close()                                {}

func (s fleetHandoffs) room() bool { return s.fleet.handoffRoom.Load() }

func (s fleetHandoffs) view() stages.View { return stages.ViewFunc(s.snapshot) }

// snapshot is the fleet's queue as last read from it (closed while it
// cannot be reached).
func (s fleetHandoffs) snapshot() stages.Snapshot {
	if p := s.fleet.handoffSnap.Load(); p != nil {
		return *p
	}
	return stages.Snapshot{Limits: s.cfg.HandoffLimits()}
}

func (s fleetHandoffs) watch(ctx context.Context) <-chan struct{} { return s.hfq.Watch(ctx) }

func (s fleetHandoffs) sweep(ctx context.Context, now time.Time) {
	if err := s.hfq.Sweep(ctx, now); err != nil && ctx.Err() == nil {
		s.log.Warn("handoff queue sweep", "err", err)
	}
}

func (s fleetHandoffs) refresh(ctx context.Context, now time.Time) {
	sn, err := s.hfq.Snapshot(ctx, now)
	storeSnapshot(&s.fleet.handoffSnap, sn, err)
	s.fleet.handoffRoom.Store(err == nil && sn.Queued < sn.Limits.Waiting)
}
