package stub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// clockSlots is how many groups a clock's period is cut into: calls are
// spread over them, so that a thousand calls do not all wake, and emit
// their frames, at the same instant.
const clockSlots = 4

// clock is one ticker shared by every call waiting on it, a wheel of
// clockSlots slots: a call keeps its slot, and each tick (every
// period/clockSlots on src) closes the channel the waiters of one slot
// hold, which wakes them all at once. Its ticks start with the first waiter
// and stop at the first full turn of the wheel that finds none.
type clock struct {
	period time.Duration
	src    backend.Clock
	next   atomic.Uint32 // the slot of the next call

	mu      sync.Mutex
	waiters int
	running bool
	slot0   int                       // the slot the next tick closes
	idle    int                       // ticks in a row that found no waiter
	due     time.Time                 // when the next tick is due
	tick    [clockSlots]chan struct{} // slot k's waiters hold tick[k], closed at its tick
}

func newClock(period time.Duration, src backend.Clock) *clock {
	return &clock{period: period, src: backend.ClockOr(src)}
}

// slot returns the slot of a new call.
func (k *clock) slot() int { return int(k.next.Add(1) % clockSlots) }

// wait returns at slot's next tick, or with ctx's error if ctx ends first.
// A clock of period 0 or less does not wait.
func (k *clock) wait(ctx context.Context, slot int) error {
	if k.period <= 0 {
		return ctx.Err()
	}
	k.mu.Lock()
	if !k.running {
		k.running = true
		for i := range k.tick {
			k.tick[i] = make(chan struct{})
		}
		k.slot0, k.idle = 0, 0
		k.due = k.src.Now()
		k.armLocked()
	}
	k.waiters++
	ch := k.tick[slot]
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.waiters--
		k.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// armLocked schedules the next tick a step after the last one was due,
// so that the wheel does not drift by the timer's latency; a wheel fallen
// a whole step behind starts again from now.
func (k *clock) armLocked() {
	step := k.period / clockSlots
	k.due = k.due.Add(step)
	d := k.due.Sub(k.src.Now())
	if d <= 0 {
		k.due, d = k.src.Now().Add(step), step
	}
	k.src.AfterFunc(d, k.fire)
}

// fire is one tick: it wakes the waiters of one slot and arms the next
// tick, unless a full turn found no one waiting.
func (k *clock) fire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	i := k.slot0
	k.slot0 = (i + 1) % clockSlots
	close(k.tick[i])
	k.tick[i] = make(chan struct{})
	if k.waiters > 0 {
		k.idle = 0
	} else if k.idle++; k.idle >= clockSlots {
		k.running = false
		return
	}
	k.armLocked()
}
