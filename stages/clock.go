package stages

import (
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Clock is the source of time for a Dispatcher and everything that waits on
// its behalf: package clock's, under the name this package's API uses.
type Clock = clock.Clock

// Timer is a pending AfterFunc call (clock.Timer).
type Timer = clock.Timer

// SystemClock is the wall clock (clock.System).
var SystemClock Clock = clock.System

// Since returns the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return clock.Since(c, t) }

// ChanTimer is clock.ChanTimer.
type ChanTimer = clock.ChanTimer

// Ticker is clock.Ticker.
type Ticker = clock.Ticker

// NewTimer is clock.NewTimer.
func NewTimer(c Clock, d time.Duration) *ChanTimer { return clock.NewTimer(c, d) }

// NewTimerAt is clock.NewTimerAt.
func NewTimerAt(c Clock, deadline time.Time) *ChanTimer { return clock.NewTimerAt(c, deadline) }

// AfterFuncAt is clock.AfterFuncAt.
func AfterFuncAt(c Clock, deadline time.Time, f func()) Timer {
	return clock.AfterFuncAt(c, deadline, f)
}

// NewTicker is clock.NewTicker.
func NewTicker(c Clock, period time.Duration) *Ticker { return clock.NewTicker(c, period) }
