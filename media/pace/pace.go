package pace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// ErrFull reports a Write that would queue more than Config.MaxBuffered bytes.
var ErrFull = errors.New("pace: buffer full")

// Config sets a Pacer's frame size and clock.
type Config struct {
	FrameBytes  int           // bytes per frame; 160 for 20 ms of 8 kHz µ-law
	Period      time.Duration // frame duration; default 20 ms
	Fill        byte          // pads a final partial frame: 0xFF for µ-law, 0 for PCM16
	MaxBuffered int           // bytes that may wait; default 60 s of audio
	// MaxLag is how far behind schedule the pacer may fall (a stalled
	// process) before it stops catching up and restarts the schedule at
	// "now"; default 5 periods. Catch-up is what keeps the stream from
	// drifting; the bound is what keeps it from bursting.
	MaxLag time.Duration
	// Clock times the frames; clock.System when nil.
	Clock clock.Clock
}

// Event is one thing the pacer releases: a frame of audio or a mark that was
// queued behind audio. Frame is only valid during the callback.
type Event struct {
	Frame []byte    // exactly FrameBytes, nil for a mark
	Mark  string    // the mark's name when Frame is nil
	Due   time.Time // when the frame was scheduled to leave
	// Gen is the pacer's generation when the event was taken off the queue.
	// Clear starts a new generation: a sender that serializes its writes
	// with Clear drops events whose Gen is no longer Generation(), so nothing
	// taken before a clear can reach the wire after it.
	Gen uint64
}

type item struct {
	data   []byte
	mark   string
	isMark bool
}

// Pacer queues audio and marks and releases them in real time from Run.
// Write, Mark, Flush, Clear and Buffered may be called from any goroutine.
type Pacer struct {
	cfg  Config
	wake chan struct{}

	mu       sync.Mutex
	items    []item
	buffered int
	gen      uint64
	stats    recorder
}

// New returns a Pacer; Run must be called for anything to be released.
func New(cfg Config) *Pacer {
	if cfg.FrameBytes <= 0 {
		cfg.FrameBytes = 160
	}
	if cfg.Period <= 0 {
		cfg.Period = 20 * time.Millisecond
	}
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = int(60 * time.Second / cfg.Period * time.Duration(cfg.FrameBytes))
	}
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = 5 * cfg.Period
	}
	return &Pacer{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Write queues audio behind whatever is already queued. It copies b.
func (p *Pacer) Write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buffered+len(b) > p.cfg.MaxBuffered {
		return fmt.Errorf("pace: %d bytes queued, %d more: %w", p.buffered, len(b), ErrFull)
	}
	if n := len(p.items); n > 0 && !p.items[n-1].isMark {
		p.items[n-1].data = append(p.items[n-1].data, b...)
	} else {
		p.items = append(p.items, item{data: append([]byte(nil), b...)})
	}
	p.buffered += len(b)
	p.notify()
	return nil
}

// Mark queues a named mark after the audio written so far, first padding that
// audio to a whole frame. The mark is released as soon as the audio before it
// has been, without taking a frame slot.
func (p *Pacer) Mark(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.padLocked()
	p.items = append(p.items, item{mark: name, isMark: true})
	p.notify()
}

// Flush pads the audio written so far to a whole frame, so that a final
// partial frame is released instead of waiting for more audio.
func (p *Pacer) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.padLocked()
	p.notify()
}

// Clear drops everything queued (a barge-in) and returns how many audio bytes
// and which marks were dropped unsent.
func (p *Pacer) Clear() (droppedBytes int, droppedMarks []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range p.items {
		if it.isMark {
			droppedMarks = append(droppedMarks, it.mark)
		}
	}
	droppedBytes = p.buffered
	p.items, p.buffered = nil, 0
	p.gen++
	return droppedBytes, droppedMarks
}

// Generation counts the Clear calls so far; see Event.Gen.
func (p *Pacer) Generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// Buffered returns the number of audio bytes waiting to be released.
func (p *Pacer) Buffered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buffered
}

// Stats returns the lateness of released frames so far.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.snapshot()
}

func (p *Pacer) padLocked() {
	n := len(p.items)
	if n == 0 || p.items[n-1].isMark {
		return
	}
	it := &p.items[n-1]
	if r := len(it.data) % p.cfg.FrameBytes; r != 0 {
		for range p.cfg.FrameBytes - r {
			it.data = append(it.data, p.cfg.Fill)
		}
		p.buffered += p.cfg.FrameBytes - r
	}
}

func (p *Pacer) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// ready reports what the head of the queue holds: a mark, a whole frame, or
// nothing releasable yet.
func (p *Pacer) ready() (mark string, isMark, frame bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return "", false, false
	}
	if it := p.items[0]; it.isMark {
		return it.mark, true, false
	} else {
		return "", false, len(it.data) >= p.cfg.FrameBytes
	}
}

// pop removes the head mark, or copies the head frame into buf, and returns
// the generation it was taken in. ok is false when a Clear emptied the queue
// in the meantime.
func (p *Pacer) pop(buf []byte, wantMark bool) (gen uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen = p.gen
	if len(p.items) == 0 {
		return gen, false
	}
	it := &p.items[0]
	if wantMark != it.isMark {
		return gen, false
	}
	if it.isMark {
		p.items = p.items[1:]
		return gen, true
	}
	if len(it.data) < p.cfg.FrameBytes {
		return gen, false
	}
	copy(buf, it.data)
	it.data = it.data[p.cfg.FrameBytes:]
	p.buffered -= p.cfg.FrameBytes
	if len(it.data) == 0 {
		p.items = p.items[1:]
	}
	return gen, true
}

// Run releases frames and marks to emit until ctx ends or emit fails. Frames
// leave at start + k·Period, where start is when audio became available after
// the queue last ran dry. Frames that could not leave on time (a stalled
// process) are caught up by releasing the next ones early, up to MaxLag, so
// the stream does not drift. Run returns ctx's error or emit's error; run it
// once at a time.
func (p *Pacer) Run(ctx context.Context, emit func(Event) error) error {
	buf := make([]byte, p.cfg.FrameBytes)
	clk := clock.Or(p.cfg.Clock)
	timer := clock.NewTimer(clk, time.Hour)
	defer timer.Stop()
	var next time.Time // due time of the next frame
	idle := true       // the queue ran dry: resume no earlier than now, without catching up
	for {
		mark, isMark, frame := p.ready()
		switch {
		case isMark:
			if gen, ok := p.pop(nil, true); ok {
				if err := emit(Event{Mark: mark, Due: clk.Now(), Gen: gen}); err != nil {
					return err
				}
			}
			continue
		case !frame:
			idle = true
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-p.wake:
			}
			continue
		}
		now := clk.Now()
		if (idle && next.Before(now)) || now.Sub(next) > p.cfg.MaxLag {
			next = now
		}
		idle = false
		if d := next.Sub(now); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
		}
		gen, ok := p.pop(buf, false)
		if !ok {
			continue // cleared while waiting
		}
		late := clock.Since(clk, next)
		p.mu.Lock()
		p.stats.add(late)
		p.mu.Unlock()
		if err := emit(Event{Frame: buf, Due: next, Gen: gen}); err != nil {
			return err
		}
		next = next.Add(p.cfg.Period)
	}
}
