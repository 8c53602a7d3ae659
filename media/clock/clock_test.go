package clock_test

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

func received(c <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-c:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestTimerOnManualClock(t *testing.T) {
	c := clock.NewManual(epoch)
	tm := clock.NewTimer(c, time.Second)
	c.Advance(999 * time.Millisecond)
	if _, ok := received(tm.C); ok {
		t.Fatal("fired early")
	}
	c.Advance(time.Millisecond)
	if at, ok := received(tm.C); !ok || !at.Equal(epoch.Add(time.Second)) {
		t.Fatalf("fired %v at %v", ok, at)
	}
	tm.Reset(time.Second)
	c.Advance(500 * time.Millisecond)
	tm.Reset(time.Second) // moves the deadline
	c.Advance(999 * time.Millisecond)
	if _, ok := received(tm.C); ok {
		t.Fatal("fired at the deadline Reset replaced")
	}
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop reports wrongly")
	}
	c.Advance(time.Hour)
	if _, ok := received(tm.C); ok || c.Pending() != 0 {
		t.Fatalf("fired after Stop (pending %d)", c.Pending())
	}
	if got := clock.Since(c, epoch); got != time.Second+1499*time.Millisecond+time.Hour {
		t.Fatalf("Since = %v", got)
	}
}

func TestTickerOnManualClock(t *testing.T) {
	c := clock.NewManual(epoch)
	tk := clock.NewTicker(c, 100*time.Millisecond)
	c.Advance(250 * time.Millisecond) // two ticks, the second missed: C holds one
	if at, ok := received(tk.C); !ok || !at.Equal(epoch.Add(100*time.Millisecond)) {
		t.Fatalf("tick %v at %v", ok, at)
	}
	if _, ok := received(tk.C); ok {
		t.Fatal("a missed tick was kept")
	}
	c.Advance(50 * time.Millisecond)
	if at, ok := received(tk.C); !ok || !at.Equal(epoch.Add(300*time.Millisecond)) {
		t.Fatalf("tick %v at %v", ok, at)
	}
	tk.Stop()
	tk.Stop()
	c.Advance(time.Second)
	if _, ok := received(tk.C); ok || c.Pending() != 0 {
		t.Fatalf("ticked after Stop (pending %d)", c.Pending())
	}
}

func TestTimerOnSystemClock(t *testing.T) {
	tm := clock.NewTimer(clock.System, time.Millisecond)
	<-tm.C // fires; how soon is the wall clock's business
	tk := clock.NewTicker(clock.System, time.Millisecond)
	<-tk.C
	<-tk.C
	tk.Stop()
}

// movingClock is a manual clock that moves on by step just before it arms
// its next jumps timers, as a goroutine preempted between reading the
// clock and arming a timer sees it.
type movingClock struct {
	*clock.Manual
	step  time.Duration
	jumps int
}

func (m *movingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	if m.jumps > 0 {
		m.jumps--
		m.Advance(m.step)
	}
	return m.Manual.AfterFunc(d, f)
}

func TestArmAtDeadlineOnMovingClock(t *testing.T) {
	deadline := epoch.Add(100 * time.Millisecond)
	for _, jumps := range []int{0, 1, 3} {
		c := &movingClock{Manual: clock.NewManual(epoch), step: 5 * time.Millisecond, jumps: jumps}
		tm := clock.NewTimerAt(c, deadline)
		c.jumps = jumps
		fired := make(chan struct{}, 1)
		clock.AfterFuncAt(c, deadline, func() { fired <- struct{}{} })
		c.Advance(deadline.Sub(c.Now()) - time.Millisecond)
		if _, ok := received(tm.C); ok {
			t.Fatalf("%d jumps: timer fired before its deadline", jumps)
		}
		c.Advance(time.Millisecond)
		if at, ok := received(tm.C); !ok || !at.Equal(deadline) {
			t.Fatalf("%d jumps: timer fired %v at %v, want at %v", jumps, ok, at, deadline)
		}
		select {
		case <-fired:
		case <-time.After(5 * time.Second): // the manual clock calls f in a goroutine
			t.Fatalf("%d jumps: AfterFuncAt did not run f at its deadline", jumps)
		}
		if c.Pending() != 0 {
			t.Fatalf("%d jumps: %d timers left armed", jumps, c.Pending())
		}
	}
}

func TestResetAtPastDeadline(t *testing.T) {
	c := clock.NewManual(epoch)
	tm := clock.NewTimerAt(c, epoch.Add(-time.Second))
	if _, ok := received(tm.C); !ok {
		t.Fatal("NewTimerAt with a passed deadline did not fire at once")
	}
	if !tm.ResetAt(epoch.Add(time.Second)) {
		t.Fatal("ResetAt reported a future deadline as passed")
	}
	if tm.ResetAt(epoch) {
		t.Fatal("ResetAt reported the present as ahead")
	}
	c.Advance(time.Hour)
	if _, ok := received(tm.C); ok || c.Pending() != 0 {
		t.Fatalf("a passed ResetAt left the timer armed (pending %d)", c.Pending())
	}
	ran := make(chan struct{})
	clock.AfterFuncAt(c, epoch, func() { close(ran) })
	c.Advance(0)
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFuncAt with a passed deadline did not run f")
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
