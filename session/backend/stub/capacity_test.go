package stub

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Over capacity the jobs are stretched by running/N; within it, none is.
// Only lower bounds are checked: a loaded machine can only make it slower.
func TestCapacityStretchesOverAdmittedJobs(t *testing.T) {
	for _, tc := range []struct {
		jobs int
		min  time.Duration
	}{
		{jobs: 2, min: 40 * time.Millisecond},
		{jobs: 6, min: 3 * 40 * time.Millisecond * 9 / 10},
	} {
		c := NewCapacity(2, nil)
		m := NewCappedModel(Settings{ModelDelay: 40 * time.Millisecond, Tokens: 1}, c)
		var wg sync.WaitGroup
		took := make([]time.Duration, tc.jobs)
		start := time.Now() // the makespan counts from before any job began
		for i := range tc.jobs {
			wg.Go(func() {
				if err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(string) error { return nil }); err != nil {
					t.Error(err)
				}
				took[i] = time.Since(start)
			})
		}
		wg.Wait()
		// The work is conserved: all of it cannot be done in less than
		// the stretched time from the moment the first job could begin
		// (one job alone takes 40 ms). Measured from there, a job that a
		// busy machine starts late cannot finish early.
		if makespan := slices.Max(took); makespan < tc.min {
			t.Errorf("%d jobs on 2: all done after %v, want at least %v", tc.jobs, makespan, tc.min)
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
