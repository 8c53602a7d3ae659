package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// callbackQueue is where the Service's callbacks wait and are claimed:
// this process's callback stage over the store (localCallbacks,
// callback.go and operator.go), or the fleet's queue, which is the store
// (fleetCallbacks, over a CallbackQueue). The Service chooses one at New
// and asks it without knowing which.
type callbackQueue interface {
	// start re-fills the queue from the store at start-up.
	start(ctx context.Context) error
	// request books a valid, consented callback (RequestCallback).
	request(ctx context.Context, req CallbackRequest, number string) (CallbackResult, error)
	// claim gives the oldest waiting callback to operator (ClaimCallback).
	claim(ctx context.Context, operator string) (Callback, error)
	// finish ends a claimed callback (FinishCallback).
	finish(ctx context.Context, ref string, attempt int, to Status, note string) (Callback, error)
	// room reports whether an offer now would find a waiting place.
	room() bool
	// view and snapshot show the queue as a stage.
	view() stages.View
	snapshot() stages.Snapshot
	// sweep and refresh are the fleet loop's steps (fleetsvc.go): run the
	// queue's timeouts, and read its room and snapshot.
	sweep(ctx context.Context, now time.Time)
	refresh(ctx context.Context, now time.Time)
}

var (
	_ callbackQueue = localCallbacks{}
	_ callbackQueue = fleetCallbacks{}
)

func (s localCallbacks) room() bool { return s.cbq.room() && !s.cb.hasBacklog() }

func (s localCallbacks) view() stages.View { return s.cbq.g }

func (s localCallbacks) snapshot() stages.Snapshot { return s.cbq.snapshot() }

// sweep and refresh: the stage's own timers expire callbacks and leases.
func (localCallbacks) sweep(context.Context, time.Time)   {}
func (localCallbacks) refresh(context.Context, time.Time) {}

// fleetCallbacks is the fleet's callback queue (Service.cq, such as
// redisqueue.CallbackStore): it bounds, orders, leases and expires
// callbacks itself, for every process at once; this process keeps only
// its last view of it (fleetState).
type fleetCallbacks struct{ *Service }

func (fleetCallbacks) start(context.Context) error { return nil }

func (s fleetCallbacks) claim(ctx context.Context, operator string) (Callback, error) {
	c, err := s.cq.Next(ctx, operator, s.clock.Now())
	if err == nil {
		s.log.Info("callback claimed", "ticket", c.Ref, "operator", operator, "attempt", c.Attempt)
	}
	return c, err
}

func (s fleetCallbacks) finish(ctx context.Context, ref string, attempt int, to Status, note string) (Callback, error) {
	c, err := s.store.Finish(ctx, ref, attempt, to, note, s.clock.Now())
	if err == nil {
		s.log.Info("callback finished", "ticket", ref, "status", c.Status, "attempt", c.Attempt)
	}
	return c, err
}

func (s fleetCallbacks) room() bool { return s.fleet.callbackRoom.Load() }

func (s fleetCallbacks) view() stages.View {
	return stages.ViewFunc(s.snapshot)
}

// snapshot is the fleet's queue as last read from it (closed while it
// cannot be reached).
func (s fleetCallbacks) snapshot() stages.Snapshot {
	if p := s.fleet.callbackSnap.Load(); p != nil {
		return *p
	}
	return stages.Snapshot{Limits: s.cfg.CallbackLimits()}
}

func (s fleetCallbacks) sweep(ctx context.Context, now time.Time) {
	if err := s.cq.Sweep(ctx, now); err != nil && ctx.Err() == nil {
		s.log.Warn("callback queue sweep", "err", err)
	}
	// A queue that journals what it accepted puts back what the store
	// lost (redisqueue): say so, once per loss.
	if j, ok := s.cq.(interface{ Republished() uint64 }); ok {
		if n := j.Republished(); n != s.fleet.republished {
			s.log.Warn("the callback store lost accepted callbacks; put back from this replica's journal", "put_back", n-s.fleet.republished)
			s.fleet.republished = n
		}
	}
}

func (s fleetCallbacks) refresh(ctx context.Context, now time.Time) {
	sn, err := s.cq.Snapshot(ctx, now)
	storeSnapshot(&s.fleet.callbackSnap, sn, err)
	s.fleet.callbackRoom.Store(err == nil && sn.Queued < sn.Limits.Waiting)
}

// request books a callback in the fleet's queue, which checks its bound in
// the same step.
func (s fleetCallbacks) request(ctx context.Context, req CallbackRequest, number string) (CallbackResult, error) {
	if prev, ok, err := s.store.Find(ctx, req.Call, req.Turn); err != nil {
		return s.notEstablished(req, err)
	} else if ok {
		return CallbackResult{Disposition: callbackDisposition(prev.Status), Ref: prev.Ref}, nil
	}
	got, created, err := s.store.Accept(ctx, Callback{Ref: newRef("cb_"), Call: req.Call, Turn: req.Turn, Number: number, Accepted: s.clock.Now()})
	switch {
	case errors.Is(err, ErrQueueFull):
		s.log.Info("callback refused", "call", req.Call, "turn", req.Turn, "disposition", stages.Overloaded, "bound", "fleet")
		return CallbackResult{Disposition: stages.Overloaded}, nil
	case err != nil:
		return s.notEstablished(req, err)
	case !created:
		return CallbackResult{Disposition: callbackDisposition(got.Status), Ref: got.Ref}, nil
	}
	s.log.Info("callback accepted", "call", req.Call, "turn", req.Turn, "ticket", got.Ref)
	return CallbackResult{Disposition: stages.Queued, Ref: got.Ref}, nil
}
