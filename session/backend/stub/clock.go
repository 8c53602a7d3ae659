package stub

import (
	"context"
	"sync"
	"time"
)

// clock is one ticker shared by every call waiting on it: each tick closes
// the channel its waiters hold, which wakes them all at once. Its goroutine
// starts with the first waiter and ends at the first tick that finds none.
type clock struct {
	period time.Duration

	mu      sync.Mutex
	waiters int
	tick    chan struct{} // closed at the next tick; nil while stopped
}

func newClock(period time.Duration) *clock { return &clock{period: period} }

// wait returns at the clock's next tick, or with ctx's error if it ends
// first. A clock of period 0 or less does not wait.
func (k *clock) wait(ctx context.Context) error {
	if k.period <= 0 {
		return ctx.Err()
	}
	k.mu.Lock()
	if k.tick == nil {
		k.tick = make(chan struct{})
		go k.run()
	}
	k.waiters++
	ch := k.tick
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
	t := time.NewTicker(k.period)
	defer t.Stop()
	for range t.C {
		k.mu.Lock()
		close(k.tick)
		if k.waiters == 0 {
			k.tick = nil
			k.mu.Unlock()
			return
		}
		k.tick = make(chan struct{})
		k.mu.Unlock()
	}
}
