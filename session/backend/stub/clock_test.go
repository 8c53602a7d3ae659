package stub

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// spyClock is a manual clock that reports each timer armed on it, by its
// duration, so that a test advances only once the code under test waits.
type spyClock struct {
	*stagestest.Clock
	armed chan time.Duration
}

func newSpyClock() *spyClock {
	return &spyClock{Clock: stagestest.NewClock(time.Unix(1_000_000, 0)), armed: make(chan time.Duration, 64)}
}

func (c *spyClock) AfterFunc(d time.Duration, f func()) backend.Timer {
	t := c.Clock.AfterFunc(d, f)
	c.armed <- d
	return t
}

// await waits for a timer of duration d to be armed, skipping others.
func (c *spyClock) await(t interface {
	Helper()
	Fatalf(string, ...any)
}, d time.Duration) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-c.armed:
			if got == d {
				return
			}
		case <-deadline:
			t.Fatalf("no timer of %v armed", d)
		}
	}
}

// TestClockRun checks the steps a clock makes for run: each at its slot's
// tick, on the clock's goroutine; a step still running at the next tick
// (its write blocked) is skipped and holds back no other call; and run
// returns, once its context ends, only after its running step has.
func TestClockRun(t *testing.T) {
	const period = 20 * time.Millisecond
	clk := stagestest.NewClock(time.Unix(0, 0))
	k := newClock(period, clk)
	waiters := func(n int) func() bool {
		return func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.waiters == n }
	}
	blocked, unblock := make(chan struct{}), make(chan struct{})
	var a, b atomic.Int32
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() {
		doneA <- k.run(ctxA, 0, func() (bool, error) {
			if a.Add(1) == 2 { // its second step: a caller who stopped reading
				close(blocked)
				<-unblock
			}
			return true, nil
		})
	}()
	waitFor(t, waiters(1))
	go func() { doneB <- k.run(context.Background(), 0, func() (bool, error) { return b.Add(1) < 5, nil }) }()
	waitFor(t, waiters(2))

	clk.Advance(period) // slot 0's tick: one step each
	if a.Load() != 1 || b.Load() != 1 {
		t.Fatalf("after a tick: steps %d and %d, want 1 and 1", a.Load(), b.Load())
	}
	advanced := make(chan struct{})
	go func() { clk.Advance(period); close(advanced) }() // A's step blocks this tick
	<-blocked
	clk.Advance(period) // the next tick skips A and steps B
	if a.Load() != 2 || b.Load() != 2 {
		t.Fatalf("with A's step blocked: steps %d and %d, want 2 and 2", a.Load(), b.Load())
	}
	cancelA()
	select {
	case err := <-doneA:
		t.Fatalf("run returned (%v) while its step was running", err)
	case <-time.After(10 * time.Millisecond):
	}
	close(unblock)
	<-advanced // the blocked tick goes on with B
	if err := <-doneA; err != context.Canceled {
		t.Fatalf("run after its context ended: %v", err)
	}
	for len(doneB) == 0 {
		clk.Advance(period)
	}
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if n := b.Load(); n != 5 {
		t.Fatalf("B made %d steps, want 5 (the last said no more)", n)
	}
	waitFor(t, waiters(0))
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.jobs[0]); n != 0 {
		t.Fatalf("%d jobs left in the slot", n)
	}
}
