package stages_test

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
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
	c := stagestest.NewClock(stagestest.Epoch)
	tm := stages.NewTimer(c, time.Second)
	c.Advance(999 * time.Millisecond)
	if _, ok := received(tm.C); ok {
		t.Fatal("fired early")
	}
	c.Advance(time.Millisecond)
	if at, ok := received(tm.C); !ok || !at.Equal(stagestest.Epoch.Add(time.Second)) {
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
	if got := stages.Since(c, stagestest.Epoch); got != time.Second+1499*time.Millisecond+time.Hour {
		t.Fatalf("Since = %v", got)
	}
}

func TestTickerOnManualClock(t *testing.T) {
	c := stagestest.NewClock(stagestest.Epoch)
	tk := stages.NewTicker(c, 100*time.Millisecond)
	c.Advance(250 * time.Millisecond) // two ticks, the second missed: C holds one
	if at, ok := received(tk.C); !ok || !at.Equal(stagestest.Epoch.Add(100*time.Millisecond)) {
		t.Fatalf("tick %v at %v", ok, at)
	}
	if _, ok := received(tk.C); ok {
		t.Fatal("a missed tick was kept")
	}
	c.Advance(50 * time.Millisecond)
	if at, ok := received(tk.C); !ok || !at.Equal(stagestest.Epoch.Add(300*time.Millisecond)) {
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
	tm := stages.NewTimer(stages.SystemClock, time.Millisecond)
	<-tm.C // fires; how soon is the wall clock's business
	tk := stages.NewTicker(stages.SystemClock, time.Millisecond)
	<-tk.C
	<-tk.C
	tk.Stop()
}
