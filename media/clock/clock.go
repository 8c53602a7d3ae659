// Package clock is frontdoor's one source of time: the Clock interface that
// every package reads the time and arms its timers through, the wall clock
// (System), timers and tickers for code that selects (ChanTimer, Ticker),
// deadline-taking timers that stay exact on a moving clock (NewTimerAt,
// AfterFuncAt), and Manual, the clock tests move by hand. Outside this
// package and the binary's main, nothing calls time.Now or arms a timer of
// package time, so every deadline in the product can be driven by a test.
package clock

import (
	"sync"
	"time"
)

// Clock is the source of time for everything in frontdoor that reads the
// time or waits: admission's dispatchers, the call engine, the backends'
// timers, the transports' pacing and timeouts. Tests substitute a Manual
// clock so that expiry and every other timeout are deterministic.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call: Stop prevents the call if it has not
// started, and reports whether it did.
type Timer = interface{ Stop() bool }

// System is the wall clock, through package time.
var System Clock = systemClock{}

// Or returns c, or System when c is nil: for the optional clocks of
// configuration structs, whose zero value means the wall clock.
func Or(c Clock) Clock {
	if c == nil {
		return System
	}
	return c
}

// Wall returns the wall-clock time d from now, for what the operating
// system keeps in wall time and a manual clock cannot move: socket read and
// write deadlines (net.Conn.SetDeadline). Nothing else should read it.
func Wall(d time.Duration) time.Time { return time.Now().Add(d) }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Since returns the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// ChanTimer is time.Timer on a Clock, for code that selects: C receives
// once, when a duration has elapsed on the clock.
type ChanTimer struct {
	// C receives the clock's time when the timer fires. It has room for one
	// value, so a timer nobody reads does not hold up the clock.
	C     <-chan time.Time
	c     chan time.Time
	clock Clock
	t     Timer
}

// NewTimer returns a ChanTimer that fires once d has elapsed on c.
func NewTimer(c Clock, d time.Duration) *ChanTimer {
	t := &ChanTimer{clock: c}
	t.Reset(d)
	return t
}

// Stop prevents the timer from firing; it reports whether it did. A value
// already in C stays there, as with time.Timer.
func (t *ChanTimer) Stop() bool {
	if t.t == nil {
		return false
	}
	return t.t.Stop()
}

// Reset stops the timer, drops a value not yet received from C, and arms it
// to fire once d has elapsed.
func (t *ChanTimer) Reset(d time.Duration) {
	t.Stop()
	t.drain()
	if r, ok := t.t.(resetter); ok {
		r.Reset(d) // the clock's timer is rearmed: no timer or closure per Reset
		return
	}
	ch, clock := t.c, t.clock
	t.t = clock.AfterFunc(d, func() {
		select {
		case ch <- clock.Now():
		default:
		}
	})
}

// ResetAt is Reset to fire at deadline rather than after a duration; it
// reports false, with the timer stopped and C drained, if deadline has
// passed. The clock's timers take a duration, read against the clock once
// more as the timer is armed; a clock that moved in between (a preempted
// goroutine, a test's manual clock advanced meanwhile) would fire it late
// by as much, so it is armed again from a new reading until the reading
// held still across the arming.
func (t *ChanTimer) ResetAt(deadline time.Time) bool {
	for {
		now := t.clock.Now()
		wait := deadline.Sub(now)
		if wait <= 0 {
			t.Stop()
			t.drain()
			return false
		}
		t.Reset(wait)
		if t.clock.Now().Sub(now) < armSlack {
			return true
		}
	}
}

// NewTimerAt returns a ChanTimer that fires at deadline on c (at once, if
// deadline has passed); see ResetAt.
func NewTimerAt(c Clock, deadline time.Time) *ChanTimer {
	t := &ChanTimer{clock: c}
	if !t.ResetAt(deadline) {
		t.c <- c.Now()
	}
	return t
}

// AfterFuncAt calls f in its own goroutine at deadline on c (at once, if
// it has passed), armed as ResetAt arms a ChanTimer: never later than the
// deadline by more than the clock moved while it was armed.
func AfterFuncAt(c Clock, deadline time.Time, f func()) Timer {
	for {
		now := c.Now()
		t := c.AfterFunc(max(deadline.Sub(now), 0), f)
		if c.Now().Sub(now) < armSlack || !t.Stop() {
			return t // armed from a reading that held, or f is under way
		}
	}
}

// armSlack is how far the clock may move while a timer is armed before it
// is armed again: less than any deadline here needs to be kept to.
const armSlack = time.Millisecond

// drain makes C, if it is not yet made, and empties it.
func (t *ChanTimer) drain() {
	if t.c == nil {
		t.c = make(chan time.Time, 1)
		t.C = t.c
	}
	select {
	case <-t.c:
	default:
	}
}

// resetter is a Timer that can be armed again for its function, as
// *time.Timer (SystemClock's) can.
type resetter interface{ Reset(d time.Duration) bool }

// Ticker is time.Ticker on a Clock: C receives the clock's time every
// period until Stop; a receiver that falls behind misses ticks.
type Ticker struct {
	C <-chan time.Time

	c      chan time.Time
	clock  Clock
	period time.Duration

	mu      sync.Mutex
	t       Timer
	stopped bool
}

// NewTicker returns a Ticker on c; period must be positive.
func NewTicker(c Clock, period time.Duration) *Ticker {
	if period <= 0 {
		panic("clock: non-positive Ticker period")
	}
	ch := make(chan time.Time, 1)
	t := &Ticker{C: ch, c: ch, clock: c, period: period}
	t.mu.Lock()
	t.t = c.AfterFunc(period, t.tick)
	t.mu.Unlock()
	return t
}

func (t *Ticker) tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	select {
	case t.c <- t.clock.Now():
	default:
	}
	t.t = t.clock.AfterFunc(t.period, t.tick)
}

// Stop ends the ticks; it is safe to call more than once.
func (t *Ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.t.Stop()
}
