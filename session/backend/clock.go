package backend

import "github.com/frontdoorhq/frontdoor/media/clock"

// Clock is the source of time for the backends' own timers: the stubs'
// pacing, the HTTP adapters' stall watchdog, the health probes, and the
// "now" a Retry-After date is read against. It is package clock's, as the
// engine's is; tests pass a clock.Manual. Where a Clock is optional, nil
// means SystemClock.
type Clock = clock.Clock

// Timer is a pending AfterFunc call (clock.Timer).
type Timer = clock.Timer

// SystemClock is the wall clock (clock.System).
var SystemClock Clock = clock.System

// ClockOr returns c, or SystemClock when c is nil.
func ClockOr(c Clock) Clock { return clock.Or(c) }
