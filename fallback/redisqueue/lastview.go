package redisqueue

import (
	"context"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/stages"
)

// lastView is a fleet queue as this process last read it (Snapshot), for
// the fallback.CallbackQueue and HandoffQueue methods that must not wait
// for Redis: Room, on every refusal's offer, and View, for /v1/stages and
// metrics. fallback.Service reads each queue's Snapshot every poll.
type lastView struct {
	limits stages.Limits
	snap   atomic.Pointer[stages.Snapshot]
}

// keep records a Snapshot's answer: sn, or while the queue is away the
// last known inventory, shown closed.
func (v *lastView) keep(sn stages.Snapshot, err error) {
	if err != nil {
		if last := v.snap.Load(); last != nil {
			sn = *last
		}
		sn.Limits = v.limits
		sn.Closed = true
	}
	v.snap.Store(&sn)
}

// room reports whether an offer would find a waiting place as last read:
// true before the first read (the queue's own bound decides), false while
// the queue cannot be reached (an offer would fail).
func (v *lastView) room() bool {
	sn := v.snap.Load()
	return sn == nil || !sn.Closed && sn.Queued < sn.Limits.Waiting
}

// Snapshot implements stages.View: the last read, or the limits alone.
func (v *lastView) Snapshot(context.Context) (stages.Snapshot, error) {
	if p := v.snap.Load(); p != nil {
		return *p, nil
	}
	return stages.Snapshot{Limits: v.limits}, nil
}

// Waiting implements stages.View: a fleet's queue is shown by its counts.
func (v *lastView) Waiting(context.Context) ([]stages.Waiter, error) { return nil, nil }
