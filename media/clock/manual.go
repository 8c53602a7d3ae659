package clock

import (
	"sort"
	"sync"
	"time"
)

// Manual is a Clock that moves only when told to. Functions scheduled with
// AfterFunc run synchronously, in deadline order, inside Advance, so a test
// decides exactly which deadlines have passed.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

type timer struct {
	c    *Manual
	at   time.Time
	f    func()
	done bool
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Now reports the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when the clock has advanced by d.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Pending reports how many scheduled functions have not yet run or stopped.
func (c *Manual) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// Advance moves the clock forward by d, running every function that falls
// due, each with the clock reading its own deadline.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *timer
		kept := c.timers[:0]
		for _, t := range c.timers {
			if t.done {
				continue
			}
			kept = append(kept, t)
			if next == nil && !t.at.After(end) {
				next = t
			}
		}
		c.timers = kept
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}
