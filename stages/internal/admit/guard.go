package admit

import (
	"context"
	"sync/atomic"
	"time"
)

// Guard returns g closed by this process alone whenever closed reports
// true, without closing the store behind it: a drain closes admission on
// one replica, never fleet-wide, and a quarantined backend's stage refuses
// new work while the others go on. While closed, Submit refuses Closed
// without reaching g, and Snapshot reports the stage closed and counts
// those refusals in its ledger (offered, refused closed), so that the
// ledger still balances. Work already queued or leased is g's as before.
func Guard(g Gate, closed func() bool) Gate {
	return &guard{Gate: g, closed: closed}
}

type guard struct {
	Gate
	closed  func() bool
	refused atomic.Uint64
}

func (g *guard) Submit(ctx context.Context, job Job) (Pending, Disposition, error) {
	if g.closed() {
		g.refused.Add(1)
		return nil, Closed, nil
	}
	return g.Gate.Submit(ctx, job)
}

func (g *guard) Snapshot(ctx context.Context) (Snapshot, error) {
	sn, err := g.Gate.Snapshot(ctx)
	n := g.refused.Load()
	sn.Ledger.Offered += n
	sn.Ledger.Refused.Closed += n
	sn.Closed = sn.Closed || g.closed()
	return sn, err
}

// Observe feeds the guarded gate's adaptive limit, when it has one.
func (g *guard) Observe(latency time.Duration, overloaded bool) {
	if o, ok := g.Gate.(Observer); ok {
		o.Observe(latency, overloaded)
	}
}
