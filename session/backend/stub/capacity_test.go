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
		c := NewCapacity(2)
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

// Cleanup after cancel is work on the capacity too, and Close cuts it short.
func TestCappedSynthesizerCleanup(t *testing.T) {
	c := NewCapacity(1)
	s := NewCappedSynthesizer(Settings{SynthDelay: time.Second, CleanupDelay: 30 * time.Millisecond}, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Time)
	go func() {
		_ = s.Synthesize(ctx, "x", func(backend.Audio) error { return nil })
		done <- time.Now()
	}()
	time.Sleep(10 * time.Millisecond)
	at := time.Now()
	cancel()
	if d := (<-done).Sub(at); d < 25*time.Millisecond {
		t.Errorf("returned %v after cancel, want the cleanup delay", d)
	}
	if s.Running() != 0 || c.Running() != 0 {
		t.Errorf("still running after return")
	}
}
