// Package stagestest provides test helpers for code built on package stages:
// a manual clock that makes dispatcher timing deterministic.
package stagestest

import (
	"sort"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Clock is a stages.Clock that moves only when told to. Functions scheduled
// with AfterFunc run synchronously, in deadline order, inside Advance.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

type timer struct {
	c    *Clock
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
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when the clock has advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) stages.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Pending reports how many scheduled functions have not yet run or stopped.
func (c *Clock) Pending() int {
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
func (c *Clock) Advance(d time.Duration) {
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
