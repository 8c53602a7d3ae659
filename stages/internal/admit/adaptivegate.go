package admit

import (
	"context"
	"fmt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"sync"
	"sync/atomic"
	"time"
)

// Observer takes the latency of a stage's useful signal, from the lease to
// the backend's first token, first audio or result, and the backend's
// overload errors (429, 503). A gate with an adaptive limit (AdaptiveGate)
// is one; the server feeds whichever stage's gate is.
type Observer interface {
	Observe(latency time.Duration, overloaded bool)
}

// LimitChange is one move of an adaptive limit, for the log and metrics.
type LimitChange struct {
	From, To int
	Estimate Estimate
}

// AdaptiveStatus is an adaptive limit as operators see it (Snapshot.Adaptive).
type AdaptiveStatus struct {
	Config   AdaptiveConfig `json:"config"`
	Estimate Estimate       `json:"estimate"`
	Changes  uint64         `json:"changes"` // moves of the limit by this replica
}

// AdaptiveGate is a Gate whose slot limit follows the Adaptive rule. The
// limit lives in the gate's store (a SlotLimiter): in process, the
// Controller's; in fleet mode, the one limit Redis holds for every replica.
// Each replica feeds its own observations to its own rule, but the rule
// starts each window from the limit the store holds and moves it by a
// compare and set, so that the fleet has one limit, moved by whichever
// replica closes a window first, never one learned per replica.
type AdaptiveGate struct {
	Gate
	lim      SlotLimiter
	clk      clock.Clock
	op       time.Duration
	onChange func(LimitChange)
	changes  atomic.Uint64

	mu   sync.Mutex
	rule *Adaptive
}

var (
	_ Observer    = (*AdaptiveGate)(nil)
	_ SlotLimiter = (*AdaptiveGate)(nil)
)

// NewAdaptiveGate returns g with its limit moved by the Adaptive rule cfg.
// g must be a SlotLimiter. The limit g's store holds is adopted (clamped
// to the bounds): a replica joining a fleet starts from the fleet's limit.
// onChange, if not nil, is told of every move this gate makes; it must not
// call back into the gate.
func NewAdaptiveGate(ctx context.Context, g Gate, cfg AdaptiveConfig, clk clock.Clock, onChange func(LimitChange)) (*AdaptiveGate, error) {
	lim, ok := g.(SlotLimiter)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no runtime slot limit", ErrAdaptive, g)
	}
	rule, err := NewAdaptive(cfg)
	if err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.System
	}
	a := &AdaptiveGate{Gate: g, lim: lim, clk: clk, op: time.Second, onChange: onChange, rule: rule}
	sn, err := g.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	rule.Sync(sn.Limits.Slots)
	if rule.Limit() != sn.Limits.Slots {
		n, err := lim.SetSlots(ctx, sn.Limits.Slots, rule.Limit())
		if err != nil {
			return nil, err
		}
		rule.Sync(n)
	}
	return a, nil
}

// Observe feeds one latency (or an overload error) to the rule. When it
// closes a window, the store's limit and demand are read, and a move is
// written back by compare and set. It never waits on the store for longer
// than a second, and a store that cannot be reached leaves the limit as it
// is.
func (a *AdaptiveGate) Observe(latency time.Duration, overloaded bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clk.Now()
	demand := 0
	cur := a.rule.Limit()
	if a.rule.due(now) {
		ctx, cancel := context.WithTimeout(context.Background(), a.op)
		defer cancel()
		sn, err := a.Gate.Snapshot(ctx)
		if err != nil {
			return
		}
		cur, demand = sn.Limits.Slots, sn.Leased+sn.Queued
		if cur != a.rule.Limit() {
			// Another replica (or an operator) moved the limit during
			// this window: it stands, and this window's samples, taken
			// under the limit before, are dropped, so that the fleet
			// moves its one limit about once a window, not once per
			// replica.
			a.rule.Sync(cur)
			a.rule.restart(now)
			a.rule.Observe(now, latency, overloaded, demand)
			return
		}
	}
	n, changed := a.rule.Observe(now, latency, overloaded, demand)
	if !changed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.op)
	defer cancel()
	got, err := a.lim.SetSlots(ctx, cur, n)
	if err != nil {
		a.rule.Sync(cur)
		return
	}
	a.rule.Sync(got)
	if got != n { // another replica moved it first: theirs stands
		return
	}
	a.changes.Add(1)
	if a.onChange != nil {
		a.onChange(LimitChange{From: cur, To: got, Estimate: a.rule.Estimate()})
	}
}

// SetSlots sets the limit as the store does (an operator's override); the
// rule goes on from it.
func (a *AdaptiveGate) SetSlots(ctx context.Context, old, n int) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, err := a.lim.SetSlots(ctx, old, n)
	if err == nil {
		a.rule.Sync(got)
	}
	return got, err
}

// Status reports the rule's bounds, its latest estimate and the moves made.
func (a *AdaptiveGate) Status() AdaptiveStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdaptiveStatus{Config: a.rule.Config(), Estimate: a.rule.Estimate(), Changes: a.changes.Load()}
}

// Snapshot is the gate's snapshot with the adaptive limit's status.
func (a *AdaptiveGate) Snapshot(ctx context.Context) (Snapshot, error) {
	sn, err := a.Gate.Snapshot(ctx)
	st := a.Status()
	sn.Adaptive = &st
	return sn, err
}
