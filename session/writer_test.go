package session

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
	s := stallWatch{clock: clock, timeout: timeout, slow: func() { slow++ }, drop: func() { drop++ }}

	// Writes that return in time: no mark, one pending check at most.
	for range 10 {
		s.begin()
		clock.Advance(timeout / 4)
		if s.end() {
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
	s.begin()
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
	if !s.end() {
		t.Fatal("the stalled write's end does not report it marked")
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d checks pending after the drop", n)
	}

	// A write that begins late in a pending check's period is timed from
	// its own start; disarm leaves nothing pending.
	s.begin()
	clock.Advance(timeout / 2)
	_ = s.end()
	s.begin() // the check armed by the first write is still pending
	clock.Advance(timeout - time.Millisecond)
	if slow != 1 {
		t.Fatal("a write marked slow before its own timeout")
	}
	clock.Advance(time.Millisecond)
	if slow != 2 {
		t.Fatalf("slow %d, want the second write marked at its own timeout", slow)
	}
	_ = s.end()
	s.disarm()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d checks pending after disarm", n)
	}
}

// TestWriterLinger: the writer's idle timer, armed once and not per wait,
// says idle only once a single wait has lasted writerLinger: a timer that
// fires for an earlier wait is armed again for the rest of the current one.
func TestWriterLinger(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	w := writerState{clock: clock}
	w.wait()
	clock.Advance(writerLinger * 6 / 10) // a frame came: the writer wrote it
	c := w.wait()                        // and waits again
	clock.Advance(writerLinger * 4 / 10) // the timer of the first wait fires
	<-c
	if w.idleFor() {
		t.Fatal("idle after 0.4 of the linger")
	}
	select {
	case <-c:
		t.Fatal("fired again before the rest of the wait")
	default:
	}
	clock.Advance(writerLinger*6/10 - time.Millisecond)
	select {
	case <-c:
		t.Fatal("fired before the wait lasted the linger")
	default:
	}
	clock.Advance(time.Millisecond)
	<-c
	if !w.idleFor() {
		t.Fatal("not idle after a whole linger")
	}
	w.release()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending after release", n)
	}
}
