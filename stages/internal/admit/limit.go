package admit

import (
	"context"
	"fmt"
)

// SlotLimiter is a stage whose slot limit may change while it runs: the
// Controller's stores and gates (LocalStore, Local, package redisstage's
// Store and Dispatcher) implement it, so that an adaptive rule (Adaptive,
// AdaptiveGate) can move the limit of whichever store a server runs on.
type SlotLimiter interface {
	// SetSlots sets the slot limit to n when it is still old (compare and
	// set; old 0 sets it whatever it is) and reports the limit after. A
	// lowered limit revokes no lease: work over it drains by releases, and
	// no lease is granted while the leases held are at or over the limit.
	// A raised limit admits waiting work at once.
	SetSlots(ctx context.Context, old, n int) (int, error)
}

// SetSlots sets the slot limit to n when it is old (0: whatever it is) and
// returns the limit after; see SlotLimiter. The limit shows in
// Snapshot.Limits.Slots. A baseline policy with no slot limit keeps none.
func (c *Controller) SetSlots(old, n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("%w: slots %d (need >= 1)", ErrLimits, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != 0 && old != c.limits.Slots {
		return c.limits.Slots, nil
	}
	c.limits.Slots = n
	c.eff = c.policy.effective(c.limits)
	if c.rec != nil {
		c.record(Operation{Op: OpLimit, At: c.last, Slots: n})
	}
	return n, nil
}

// SetSlots sets the controller's slot limit (Controller.SetSlots) and, when
// it rose, admits waiting work into the new slots at once.
func (d *Dispatcher) SetSlots(old, n int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	got, err := d.c.SetSlots(old, n)
	if err == nil {
		d.pump(d.clk.Now())
	}
	return got, err
}

func (s localStore) SetSlots(_ context.Context, old, n int) (int, error) { return s.c.SetSlots(old, n) }

// SetSlots moves the slot limit (Dispatcher.SetSlots).
func (g *Local) SetSlots(_ context.Context, old, n int) (int, error) { return g.d.SetSlots(old, n) }

// SetSlots moves the limit of the guarded gate when it has one.
func (g *guard) SetSlots(ctx context.Context, old, n int) (int, error) {
	l, ok := g.Gate.(SlotLimiter)
	if !ok {
		return 0, fmt.Errorf("%w: gate has no runtime slot limit", ErrLimits)
	}
	return l.SetSlots(ctx, old, n)
}
