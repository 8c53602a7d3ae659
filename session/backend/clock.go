package backend

import "time"

// Clock is the source of time for the backends' own timers: the stubs'
// pacing, the HTTP adapters' stall watchdog, the health probes, and the
// "now" a Retry-After date is read against. Its methods are those of
// stages.Clock (this package does not import stages), so the engine's clock
// is passed as it is; tests pass a manual one (stagestest.Clock). Where a
// Clock is optional, nil means SystemClock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call: Stop prevents it if it has not
// started, and reports whether it did. It is the same type as stages.Timer.
type Timer = interface{ Stop() bool }

// SystemClock is the wall clock, through package time.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ClockOr returns c, or SystemClock when c is nil.
func ClockOr(c Clock) Clock {
	if c == nil {
		return SystemClock
	}
	return c
}
