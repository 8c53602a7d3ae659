package stub

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// Over capacity the jobs are stretched by running/N; within it, none is:
// on a manual clock, advanced once every job waits at the speed of all of
// them, every job ends exactly at the stretched time.
func TestCapacityStretchesOverAdmittedJobs(t *testing.T) {
	const delay = 40 * time.Millisecond
	for _, tc := range []struct {
		jobs int
		want time.Duration
	}{
		{jobs: 2, want: delay},
		{jobs: 4, want: 2 * delay},
	} {
		clk := stagestest.NewClock(time.Unix(0, 0))
		c := NewCapacity(2, clk)
		m := NewCappedModel(Settings{ModelDelay: delay, Tokens: 1, Clock: clk}, c)
		start := clk.Now()
		var wg sync.WaitGroup
		took := make([]time.Duration, tc.jobs)
		for i := range tc.jobs {
			wg.Go(func() {
				if err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(string) error { return nil }); err != nil {
					t.Error(err)
				}
				took[i] = clk.Now().Sub(start)
			})
		}
		waitFor(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.running == tc.jobs && c.settled == tc.jobs
		})
		clk.Advance(tc.want)
		wg.Wait()
		for i, d := range took {
			if d != tc.want {
				t.Errorf("%d jobs on 2: job %d done after %v, want %v", tc.jobs, i, d, tc.want)
			}
		}
		if got := c.MaxRunning(); got != tc.jobs {
			t.Errorf("MaxRunning = %d, want %d", got, tc.jobs)
		}
		if c.Running() != 0 {
			t.Errorf("Running = %d after all returned", c.Running())
		}
	}
}

// Cleanup after cancel is work on the capacity too, timed on its clock.
func TestCappedSynthesizerCleanup(t *testing.T) {
	const cleanup = 30 * time.Millisecond
	clk := newSpyClock()
	c := NewCapacity(1, clk)
	s := NewCappedSynthesizer(Settings{SynthDelay: time.Second, CleanupDelay: cleanup, Clock: clk}, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = s.Synthesize(ctx, "x", func(backend.Audio) error { return nil })
		close(done)
	}()
	clk.await(t, time.Second)
	clk.Advance(10 * time.Millisecond)
	cancel()
	clk.await(t, cleanup)
	at := clk.Now()
	clk.Advance(cleanup - time.Nanosecond)
	select {
	case <-done:
		t.Fatal("returned before the cleanup delay")
	default:
	}
	clk.Advance(time.Nanosecond)
	<-done
	if d := clk.Now().Sub(at); d != cleanup {
		t.Errorf("returned %v after cancel, want the cleanup delay %v", d, cleanup)
	}
	if s.Running() != 0 || c.Running() != 0 {
		t.Errorf("still running after return")
	}
}
