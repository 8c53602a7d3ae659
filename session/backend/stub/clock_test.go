package stub

import (
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
