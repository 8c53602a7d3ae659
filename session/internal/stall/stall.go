// Package stall watches a call's writes with one timer: a write that
// takes too long marks the caller slow, then drops the connection.
package stall

import (
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Watch is a call's one watchdog over its writes. A timer and a
// context with a deadline per write cost a few per cent of a process's
// CPU at 50 frames a second per call; so each write only notes when it
// began, and a single timer, armed by the first write that finds none
// pending, checks the write in progress when it fires: it marks the
// caller slow once that write has taken timeout, drops the connection
// at twice that, and is armed again for the write's next deadline while
// one is in progress. A timer that finds no write in progress is not
// armed again, and the writer disarms it when it stops, so an idle call
// holds none. The clock is the engine's.
type Watch struct {
	Clock   clock.Clock
	Timeout time.Duration
	Slow    func() // at Timeout: the call ends as a slow reader
	Drop    func() // at twice the Timeout: the connection is dropped

	mu     sync.Mutex
	since  time.Time   // start of the write in progress; zero: none
	marked bool        // the write in progress was marked slow
	t      clock.Timer // the pending check; nil: none
	epoch  uint64      // the pending check's; a check of another epoch was disarmed
}

// Begin notes the start of a write at now (the Clock's reading, which the
// writer has at hand) and arms the check if none is pending.
func (s *Watch) Begin(now time.Time) {
	s.mu.Lock()
	s.since, s.marked = now, false
	if s.t == nil {
		s.armLocked(s.Timeout)
	}
	s.mu.Unlock()
}

// End notes that the write returned and reports whether it was marked
// slow.
func (s *Watch) End() bool {
	s.mu.Lock()
	marked := s.marked
	s.since, s.marked = time.Time{}, false
	s.mu.Unlock()
	return marked
}

// Disarm stops the pending check (the writer stops).
func (s *Watch) Disarm() {
	s.mu.Lock()
	if s.t != nil {
		s.t.Stop()
		s.t = nil
		s.epoch++
	}
	s.mu.Unlock()
}

func (s *Watch) armLocked(d time.Duration) {
	s.epoch++
	epoch := s.epoch
	s.t = s.Clock.AfterFunc(d, func() { s.check(epoch) })
}

// check runs when the check of epoch is due.
func (s *Watch) check(epoch uint64) {
	now := s.Clock.Now()
	s.mu.Lock()
	if epoch != s.epoch || s.t == nil { // disarmed, or superseded
		s.mu.Unlock()
		return
	}
	s.t = nil
	if s.since.IsZero() { // no write in progress: the next one arms a check
		s.mu.Unlock()
		return
	}
	took := now.Sub(s.since)
	slow := took >= s.Timeout && !s.marked
	if slow {
		s.marked = true
	}
	drop := took >= 2*s.Timeout
	switch {
	case drop: // the drop ends the write; the next one arms a check
	case took >= s.Timeout:
		s.armLocked(2*s.Timeout - took)
	default:
		s.armLocked(s.Timeout - took)
	}
	s.mu.Unlock()
	if slow {
		s.Slow()
	}
	if drop {
		s.Drop()
	}
}
