package admit

import (
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Alarm is one pending wake-up at a deadline that moves: the head of a queue
// changes, so its expiry timer is re-armed, and a call from a superseded
// timer must be ignored. The zero Alarm is disarmed. An Alarm is not safe for
// concurrent use: its owner guards it with the lock that guards the queue.
type Alarm struct {
	timer    clock.Timer
	deadline time.Time
	seq      uint64
}

// Set arms the alarm to call fire at deadline, reading the delay on clock
// from now, unless it is already armed for that deadline. fire receives the
// arming's sequence number, to be checked with Fired under the owner's lock.
func (a *Alarm) Set(clk clock.Clock, deadline, now time.Time, fire func(seq uint64)) {
	if a.timer != nil && a.deadline.Equal(deadline) {
		return
	}
	a.Clear()
	a.deadline = deadline
	a.seq++
	seq := a.seq
	a.timer = clk.AfterFunc(deadline.Sub(now), func() { fire(seq) })
}

// Clear disarms the alarm.
func (a *Alarm) Clear() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer, a.deadline = nil, time.Time{}
	}
}

// Fired reports whether seq is the alarm's current arming and, if it is,
// disarms it. A call from a timer that was re-armed or cleared since it
// started reports false and should do nothing.
func (a *Alarm) Fired(seq uint64) bool {
	if seq != a.seq || a.timer == nil {
		return false
	}
	a.timer, a.deadline = nil, time.Time{}
	return true
}
