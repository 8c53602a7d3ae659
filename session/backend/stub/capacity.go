package stub

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Capacity is a processor-sharing model of the compute behind a backend: up
// to N jobs run at full speed, and with more running at once every job's
// delays stretch by running/N, as on a GPU or CPU shared by all its
// requests. Without it an admission policy that over-admits would look
// free, because the stubs' sleeps do not compete for anything.
//
// A job counts as running from the start of its call until it returns,
// including its cleanup after cancel: a backend that is still stopping
// still uses its share.
type Capacity struct {
	n     int
	clock backend.Clock

	mu      sync.Mutex
	running int
	work    float64   // nanoseconds of work each running job has received
	at      time.Time // when work was last advanced
	changed chan struct{}
	peak    int
	// settled counts the waiters whose timer was armed at the current
	// speed (since the last change): with settled == running, nothing
	// moves until the clock does (tests advance a manual clock then).
	settled int
}

// NewCapacity returns a capacity of n jobs at full speed (n < 1: 1), whose
// work is timed on clock (nil: backend.SystemClock); give it the clock of
// the stubs that run on it.
func NewCapacity(n int, clock backend.Clock) *Capacity {
	clock = backend.ClockOr(clock)
	return &Capacity{n: max(n, 1), clock: clock, at: clock.Now(), changed: make(chan struct{})}
}

// N returns the number of jobs that run at full speed.
func (c *Capacity) N() int { return c.n }

// Running returns the jobs running now.
func (c *Capacity) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

// MaxRunning returns the most jobs ever running at once.
func (c *Capacity) MaxRunning() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak
}

// rate is the speed of each job, 1 at full speed.
func (c *Capacity) rate() float64 {
	if c.running <= c.n {
		return 1
	}
	return float64(c.n) / float64(c.running)
}

// advance credits every running job with the work done since the last
// change; the rate is constant between changes.
func (c *Capacity) advance(now time.Time) {
	c.work += float64(now.Sub(c.at)) * c.rate()
	c.at = now
}

func (c *Capacity) change(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(c.clock.Now())
	c.running += delta
	c.peak = max(c.peak, c.running)
	close(c.changed) // wake the waiters: their speed changed
	c.changed = make(chan struct{})
	c.settled = 0
}

func (c *Capacity) enter() { c.change(1) }
func (c *Capacity) exit()  { c.change(-1) }

// wait does d of work at the shared speed. It returns early with ctx's
// error, or with nil when stop is closed.
func (c *Capacity) wait(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	c.advance(c.clock.Now())
	target := c.work + float64(d)
	for {
		left := target - c.work
		if left <= 0 {
			c.mu.Unlock()
			return nil
		}
		sleep := time.Duration(left / c.rate())
		changed := c.changed
		done := make(chan struct{})
		t := c.clock.AfterFunc(max(sleep, time.Microsecond), func() { close(done) })
		c.settled++
		c.mu.Unlock()
		var err error
		select {
		case <-done:
		case <-changed:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop:
		}
		t.Stop()
		c.mu.Lock()
		if changed == c.changed {
			c.settled--
		}
		if err != nil || isClosed(stop) {
			c.mu.Unlock()
			return err
		}
		c.advance(c.clock.Now())
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stopOn is core.stop with the cleanup delay done on c.
func (c *Capacity) stopOn(k *core, err error) error {
	if k.s.Hang {
		return k.stop(err)
	}
	_ = c.wait(context.Background(), k.s.CleanupDelay, k.closed)
	return err
}

// CappedModel is a Model whose delays, including cleanup, are work on a
// shared Capacity.
type CappedModel struct {
	*Model
	c *Capacity
}

// NewCappedModel returns a stub model with settings s running on c.
func NewCappedModel(s Settings, c *Capacity) *CappedModel {
	return &CappedModel{NewModel(s), c}
}

// Capacity returns the capacity the model runs on.
func (m *CappedModel) Capacity() *Capacity { return m.c }

// Reply implements backend.Model.
func (m *CappedModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	m.enter()
	defer m.exit()
	m.c.enter()
	defer m.c.exit()
	if err := m.c.wait(ctx, m.s.ModelDelay, nil); err != nil {
		return m.c.stopOn(m.core, err)
	}
	if err := m.fail("reply"); err != nil {
		return err
	}
	for i, delta := range m.Deltas(t.Text) {
		if i > 0 {
			if err := m.c.wait(ctx, m.s.TokenDelay, nil); err != nil {
				return m.c.stopOn(m.core, err)
			}
		} else if err := ctx.Err(); err != nil {
			return m.c.stopOn(m.core, err)
		}
		if err := emit(delta); err != nil {
			return m.c.stopOn(m.core, backend.EmitError("stub", "reply", err))
		}
	}
	return nil
}

// CappedSynthesizer is a Synthesizer whose delays, including cleanup, are
// work on a shared Capacity.
type CappedSynthesizer struct {
	*Synthesizer
	c *Capacity
}

// NewCappedSynthesizer returns a stub synthesizer with settings s running
// on c.
func NewCappedSynthesizer(s Settings, c *Capacity) *CappedSynthesizer {
	return &CappedSynthesizer{NewSynthesizer(s), c}
}

// Capacity returns the capacity the synthesizer runs on.
func (s *CappedSynthesizer) Capacity() *Capacity { return s.c }

// Synthesize implements backend.Synthesizer.
func (s *CappedSynthesizer) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	s.enter()
	defer s.exit()
	s.c.enter()
	defer s.c.exit()
	if err := s.c.wait(ctx, s.s.SynthDelay, nil); err != nil {
		return s.c.stopOn(s.core, err)
	}
	if err := s.fail("synthesize"); err != nil {
		return err
	}
	for i := range s.s.FrameCount {
		if i > 0 {
			if err := s.c.wait(ctx, s.s.FrameDelay, nil); err != nil {
				return s.c.stopOn(s.core, err)
			}
		} else if err := ctx.Err(); err != nil {
			return s.c.stopOn(s.core, err)
		}
		if err := emit(backend.Audio{Rate: s.s.Rate, Samples: s.wave.frame(i)}); err != nil {
			return s.c.stopOn(s.core, backend.EmitError("stub", "synthesize", err))
		}
	}
	return nil
}
