package stub

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// SetN changes the jobs that run at full speed to n (n < 1: 1), at once:
// the jobs running go on at the new speed, as on a GPU server whose share
// of another tenant's work grew or shrank.
func (c *Capacity) SetN(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(c.clock.Now())
	c.n = max(n, 1)
	close(c.changed)
	c.changed = make(chan struct{})
	c.settled = 0
}

// Step is one change of a capacity: to N jobs at full speed, At after the
// schedule starts.
type Step struct {
	At time.Duration
	N  int
}

// ParseSteps reads a capacity and its changes: "10" or "10,4@10s,15@20s"
// (10 jobs at first, 4 from 10 s after the start, 15 from 20 s).
func ParseSteps(s string) ([]Step, error) {
	var steps []Step
	for i, part := range strings.Split(s, ",") {
		ns, at, timed := strings.Cut(strings.TrimSpace(part), "@")
		n, err := strconv.Atoi(ns)
		if err != nil || n < 1 || timed == (i == 0) {
			return nil, fmt.Errorf("stub: capacity steps %q: want N,N@DURATION,... (10,4@10s,15@20s)", s)
		}
		var d time.Duration
		if timed {
			if d, err = time.ParseDuration(at); err != nil || d <= 0 || (len(steps) > 0 && d <= steps[len(steps)-1].At) {
				return nil, fmt.Errorf("stub: capacity steps %q: durations must rise", s)
			}
		}
		steps = append(steps, Step{At: d, N: n})
	}
	return steps, nil
}

// Schedule is a capacity that follows steps from its first job on, so
// that a measurement's phases are timed from its first turn, not from the
// server's start.
type Schedule struct {
	*Capacity
	steps []Step

	mu      sync.Mutex
	started bool
	stopped bool
	timers  []backend.Timer
}

// NewSchedule returns a capacity of steps[0].N jobs that moves to each
// later step's N at its time after the first job enters.
func NewSchedule(steps []Step, clock backend.Clock) *Schedule {
	return &Schedule{Capacity: NewCapacity(steps[0].N, clock), steps: steps}
}

// start arms the steps' timers on the first job.
func (s *Schedule) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	for _, st := range s.steps[1:] {
		n := st.N
		s.timers = append(s.timers, s.clock.AfterFunc(st.At, func() { s.SetN(n) }))
	}
}

// Stop ends the schedule's timers.
func (s *Schedule) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, t := range s.timers {
		t.Stop()
	}
}

// NewScheduledModel returns a stub model with settings s running on a
// capacity that follows steps from its first reply on; Close stops the
// schedule.
func NewScheduledModel(st Settings, steps []Step, clock backend.Clock) *ScheduledModel {
	sc := NewSchedule(steps, clock)
	return &ScheduledModel{CappedModel: NewCappedModel(st, sc.Capacity), sc: sc}
}

// ScheduledModel is a CappedModel whose capacity changes on a schedule.
type ScheduledModel struct {
	*CappedModel
	sc *Schedule
}

// Schedule returns the model's capacity schedule.
func (m *ScheduledModel) Schedule() *Schedule { return m.sc }

// Reply implements backend.Model.
func (m *ScheduledModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	m.sc.start()
	return m.CappedModel.Reply(ctx, t, emit)
}

// Close stops the schedule and the model.
func (m *ScheduledModel) Close() error {
	m.sc.Stop()
	return m.CappedModel.Close()
}
