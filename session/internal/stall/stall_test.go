package stall

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestStallWatch: on a manual clock, a write that takes the timeout marks
// the caller slow at exactly that time, once; at twice the timeout the
// connection is dropped; the write's end reports that it was marked. Writes
// that return in time arm at most one check between them, and a watch
// with no write in progress, or disarmed, holds no timer.
func TestStallWatch(t *testing.T) {
	const timeout = 100 * time.Millisecond
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	var slow, drop int
	s := Watch{Clock: clock, Timeout: timeout, Slow: func() { slow++ }, Drop: func() { drop++ }}

	// Writes that return in time: no mark, one pending check at most.
	for range 10 {
		s.Begin(clock.Now())
		clock.Advance(timeout / 4)
		if s.End() {
			t.Fatal("a write in time marked slow")
		}
		if n := clock.Pending(); n > 1 {
			t.Fatalf("%d checks pending, want at most 1", n)
		}
	}
	if slow != 0 || drop != 0 {
		t.Fatalf("slow %d drop %d after writes in time", slow, drop)
	}
	clock.Advance(timeout) // the check finds no write in progress
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d checks pending with no write in progress", n)
	}

	// A write that stalls: marked at exactly timeout, dropped at twice it.
	s.Begin(clock.Now())
	clock.Advance(timeout - time.Millisecond)
	if slow != 0 {
		t.Fatal("marked slow before the timeout")
	}
	clock.Advance(time.Millisecond)
	if slow != 1 || drop != 0 {
		t.Fatalf("at the timeout: slow %d drop %d, want 1 0", slow, drop)
	}
	clock.Advance(timeout - time.Millisecond)
	if drop != 0 {
		t.Fatal("dropped before twice the timeout")
	}
	clock.Advance(time.Millisecond)
	if slow != 1 || drop != 1 {
		t.Fatalf("at twice the timeout: slow %d drop %d, want 1 1", slow, drop)
	}
	if !s.End() {
		t.Fatal("the stalled write's end does not report it marked")
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d checks pending after the drop", n)
	}

	// A write that begins late in a pending check's period is timed from
	// its own start; disarm leaves nothing pending.
	s.Begin(clock.Now())
	clock.Advance(timeout / 2)
	_ = s.End()
	s.Begin(clock.Now()) // the check armed by the first write is still pending
	clock.Advance(timeout - time.Millisecond)
	if slow != 1 {
		t.Fatal("a write marked slow before its own timeout")
	}
	clock.Advance(time.Millisecond)
	if slow != 2 {
		t.Fatalf("slow %d, want the second write marked at its own timeout", slow)
	}
	_ = s.End()
	s.Disarm()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d checks pending after disarm", n)
	}
}

// TestWriterLinger: the writer's idle timer, armed once and not per wait,
// says idle only once a single wait has lasted writerLinger: a timer that
