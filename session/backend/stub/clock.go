package stub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// clockSlots is how many groups a clock's period is cut into: calls are
// spread over them, so that a thousand calls do not all wake, and emit
// their frames, at the same instant.
const clockSlots = 4

// clock is one ticker shared by every call waiting on it, a wheel of
// clockSlots slots: a call keeps its slot, and each tick (every
// period/clockSlots) closes the channel the waiters of one slot hold,
// which wakes them all at once. Its goroutine starts with the first waiter
// and ends at the first full turn of the wheel that finds none.
type clock struct {
	period time.Duration
	next   atomic.Uint32 // the slot of the next call

	mu      sync.Mutex
	waiters int
	running bool
	tick    [clockSlots]chan struct{} // slot k's waiters hold tick[k], closed at its tick
}

func newClock(period time.Duration) *clock { return &clock{period: period} }

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
		go k.run()
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

func (k *clock) run() {
	t := time.NewTicker(k.period / clockSlots)
	defer t.Stop()
	idle := 0 // ticks in a row that found no waiter
	for i := 0; ; i = (i + 1) % clockSlots {
		<-t.C
		k.mu.Lock()
		close(k.tick[i])
		k.tick[i] = make(chan struct{})
		if k.waiters > 0 {
			idle = 0
		} else if idle++; idle >= clockSlots {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
	}
}
