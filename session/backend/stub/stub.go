package stub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Settings shape the stubs' behaviour. The zero value answers at once.
type Settings struct {
	// ModelDelay is the time to the first token.
	ModelDelay time.Duration
	// TokenDelay is the time between tokens.
	TokenDelay time.Duration
	// Tokens is the number of text deltas per reply (0: 8).
	Tokens int
	// SentenceWords ends a sentence of the echoing model's reply every
	// that many words (0: one sentence, ended by the last word), so that
	// a reply streams to synthesis sentence by sentence.
	SentenceWords int
	// SynthDelay is the time to the first audio frame; also the
	// recognizer's time to answer.
	SynthDelay time.Duration
	// FrameCount is the number of 20 ms frames per synthesis (0: 10).
	FrameCount int
	// WordFrames, when positive, makes a synthesis that many 20 ms frames
	// per word of its text instead of FrameCount (20 is speech at 150
	// words a minute), so that a reply's audio lasts as long as its text.
	WordFrames int
	// FrameDelay is the time between frames (0: as fast as emit returns).
	FrameDelay time.Duration
	// FrameChunk is how many 20 ms frames one emit carries (0: 1), the
	// chunks FrameChunk·FrameDelay apart, as a streaming TTS service
	// sends audio in chunks of a few hundred milliseconds: the pacing of
	// each 20 ms frame on the line is then the server's own work.
	FrameChunk int
	// Rate is the synthesized sample rate (0: 16000).
	Rate int
	// CleanupDelay is the time from cancel (or an emit error) to the
	// confirmed stop: the call returns only after it.
	CleanupDelay time.Duration
	// FailRate is the probability in [0,1] that a call fails, with
	// FailKind, before producing anything. Draws use a rand seeded by Seed.
	FailRate float64
	// FailKind is the kind of injected failures (default unavailable).
	FailKind backend.Kind
	// Seed seeds the failure draws (0: 1).
	Seed uint64
	// Hang makes a stopped call never confirm its cleanup: after cancel it
	// blocks until Close is called, as a wedged backend would.
	Hang bool
	// Demo makes the model the demo agent: it answers from a small script
	// (DemoAnswer), one word per delta, instead of echoing Tokens words.
	Demo bool
	// Clock times every delay above (nil: backend.SystemClock).
	Clock backend.Clock
}

// Counter tracks calls running now and the most ever running at once.
type Counter struct {
	running, peak, started atomic.Int64
}

func (c *Counter) enter() {
	c.started.Add(1)
	n := c.running.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (c *Counter) exit() { c.running.Add(-1) }

// Running returns the calls running now.
func (c *Counter) Running() int { return int(c.running.Load()) }

// MaxRunning returns the most calls ever running at once.
func (c *Counter) MaxRunning() int { return int(c.peak.Load()) }

// Started returns the number of calls ever started.
func (c *Counter) Started() int { return int(c.started.Load()) }

// core is what the three stubs share: settings, counter, failure draws and
// the Close that releases hung calls.
type core struct {
	Counter
	s         Settings
	mu        sync.Mutex
	rnd       *rand.Rand
	closeOnce sync.Once
	closed    chan struct{}
}

func newCore(s Settings) *core {
	seed := s.Seed
	if seed == 0 {
		seed = 1
	}
	if s.FailKind == "" {
		s.FailKind = backend.KindUnavailable
	}
	s.Clock = backend.ClockOr(s.Clock)
	return &core{s: s, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), closed: make(chan struct{})}
}

// Close releases every call blocked by Hang (and those to come, which then
// stop without hanging). It is idempotent.
func (c *core) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *core) fail(op string) error {
	if c.s.FailRate <= 0 {
		return nil
	}
	c.mu.Lock()
	x := c.rnd.Float64()
	c.mu.Unlock()
	if x >= c.s.FailRate {
		return nil
	}
	return &backend.Error{Kind: c.s.FailKind, Backend: "stub", Op: op, Err: fmt.Errorf("injected failure")}
}

// wait sleeps d on the clock unless ctx ends first; it reports ctx's error.
func (c *core) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return sleep(ctx, c.s.Clock, d, nil)
}

// sleep waits until d has elapsed on clock, ctx ends (its error) or stop is
// closed (nil).
func sleep(ctx context.Context, clock backend.Clock, d time.Duration, stop <-chan struct{}) error {
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop simulates the backend stopping after cancel or an emit error: the
// cleanup delay, or, with Hang, until Close. Close also cuts the delay short
// so that tests can end.
func (c *core) stop(err error) error {
	if c.s.Hang {
		<-c.closed
		return err
	}
	if c.s.CleanupDelay > 0 {
		_ = sleep(context.Background(), c.s.Clock, c.s.CleanupDelay, c.closed)
	}
	return err
}
