package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/pace"
	"github.com/frontdoorhq/frontdoor/media/pcm"
)

// Options configure a Conn. Zero values take the defaults noted.
type Options struct {
	WriteTimeout time.Duration // per outbound message; default 5 s
	MaxBuffered  time.Duration // outbound audio that may wait in the pacer; default 60 s
	Clock        clock.Clock   // paces frames and tells what was heard; default clock.System
}

// Internal pacer marks bracket each utterance's audio so the sender knows
// which utterance a frame belongs to; they never reach the wire.
const (
	beginPrefix = "\x00begin:"
	endPrefix   = "\x00end:"
)

// Conn is one gateway connection of any dialect. It reads and decodes the
// gateway's messages, and sends audio in the stream's format paced in frames
// of the dialect's FrameDuration, a mark after each utterance where the
// dialect has marks, and a clear on barge-in, returning what the caller
// heard. Read must be called from one goroutine and Run from another; the
// Send, EndUtterance, Clear and Hangup methods from any.
//
// Where the dialect has marks, an utterance has played when Read returns the
// echo of its final mark with Progress.Done. Where it has none (AudioSocket,
// mod_audio_stream), audio leaves in real time and is played as it arrives,
// so an utterance has played once Buffered is zero after its EndUtterance,
// and Tracker().Progress tells how much of it went out.
type Conn struct {
	link    Link
	codec   Codec
	caps    Capabilities
	opts    Options
	tracker *Tracker
	started chan struct{} // closed once start was read
	held    *Event        // audio that started the stream (ImplicitStart), for the next Read; Read's goroutine only

	sendMu  sync.Mutex // orders audio, marks, clear and hang-up on the wire
	current string     // utterance of the frames being sent; under sendMu
	out     []byte     // the encoder's reused buffer; under sendMu

	mu        sync.Mutex
	start     *Start
	pacer     *pace.Pacer   // set at start, when the format is known
	frame     time.Duration // the audio in one outbound message; set at start
	queued    string        // utterance whose audio was queued last
	resampler *pcm.Resampler
	scratch   []int16
}

// NewConn returns a Conn that speaks codec over link.
func NewConn(link Link, codec Codec, opts Options) *Conn {
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = time.Minute
	}
	caps := codec.Capabilities()
	if caps.FrameDuration <= 0 {
		caps.FrameDuration = media.FrameDuration
	}
	return &Conn{
		link: link, codec: codec, caps: caps, opts: opts,
		tracker: NewTracker(opts.Clock), started: make(chan struct{}),
	}
}

// Codec returns the connection's dialect.
func (c *Conn) Codec() Codec { return c.codec }

// Read returns the next event from the gateway. The first meaningful event
// must be start, and only one start may come: anything else is a
// *DecodeError wrapping ErrOrder. A start fixes the stream's identifiers and
// audio format; a mark echo updates the Tracker and carries the utterance's
// Progress. Bad input yields a *DecodeError and the connection stays up;
// other errors are the link's. ctx should live as long as the connection.
func (c *Conn) Read(ctx context.Context) (Event, error) {
	if ev := c.held; ev != nil {
		c.held = nil
		return *ev, nil
	}
	f, err := c.link.ReadFrame(ctx)
	if err != nil {
		return Event{}, err
	}
	ev, err := c.codec.Decode(f)
	if err != nil {
		return Event{}, err
	}
	c.mu.Lock()
	started := c.start != nil
	c.mu.Unlock()
	if !started && ev.Kind == KindMedia && c.caps.ImplicitStart && len(c.caps.Formats) > 0 {
		// The audio is returned by the next Read; it aliases the frame,
		// which stays valid as that Read reads nothing.
		c.held = &ev
		s := &Start{StreamID: ImplicitStreamID, Format: c.caps.Formats[0]}
		c.begin(s)
		return Event{Kind: KindStart, Name: "implicit", Start: s}, nil
	}
	switch {
	case ev.Kind == KindStart && started:
		return Event{}, Errorf(c.codec.Name(), ev.Name, "", ErrOrder, "a second start")
	case ev.Kind == KindStart:
		if err := ev.Start.Format.Validate(); err != nil {
			return Event{}, Errorf(c.codec.Name(), ev.Name, "format", ErrUnsupported, "%v", err)
		}
		c.begin(ev.Start)
	case !started && ev.Kind != KindInfo && ev.Kind != KindError:
		return Event{}, Errorf(c.codec.Name(), ev.Name, "", ErrOrder, "%s before start", ev.Kind)
	case ev.Kind == KindMark:
		if p, ok := c.tracker.Echo(ev.Mark); ok {
			ev.Progress = &p
		}
	}
	return ev, nil
}

func (c *Conn) begin(s *Start) {
	f := s.Format
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start = s
	c.frame = c.caps.MessageDuration(f)
	c.pacer = pace.New(pace.Config{
		FrameBytes:  f.BytesPer(c.frame),
		Period:      c.frame,
		Fill:        Silence(f),
		MaxBuffered: f.BytesPer(c.opts.MaxBuffered),
		Clock:       c.opts.Clock,
	})
	close(c.started)
}

// Start returns the stream's start, or nil before it was read.
func (c *Conn) Start() *Start {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start
}

// Format returns the stream's audio format (zero before start).
func (c *Conn) Format() media.Format {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start == nil {
		return media.Format{}
	}
	return c.start.Format
}

// SendAudio queues audio of the named utterance in the stream's format
// (Format); it leaves in real time while Run runs. Chunks may be of any size.
func (c *Conn) SendAudio(utterance string, audio []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queueLocked(utterance, audio)
}

func (c *Conn) queueLocked(utterance string, audio []byte) error {
	if c.start == nil {
		return ErrNotStarted
	}
	c.beginLocked(utterance)
	return c.pacer.Write(audio)
}

// beginLocked starts utterance's audio in the queue unless it is the one
// being queued.
func (c *Conn) beginLocked(utterance string) {
	if c.queued != utterance {
		c.pacer.Mark(beginPrefix + utterance)
		c.queued, c.resampler = utterance, nil
	}
}

// SendPCM queues PCM16 samples at rate Hz, resampled to the stream's rate
// and encoded in its format, like SendAudio. The resampler is kept across
// the calls of one utterance, so chunk boundaries do not click.
func (c *Conn) SendPCM(utterance string, samples []int16, rate int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start == nil {
		return ErrNotStarted
	}
	c.beginLocked(utterance)
	f := c.start.Format
	if rate != f.SampleRate {
		if c.resampler == nil {
			r, err := pcm.NewResampler(rate, f.SampleRate)
			if err != nil {
				return fmt.Errorf("gateway: SendPCM: %w", err)
			}
			c.resampler = r
		} else if in, _ := c.resampler.Rates(); in != rate {
			return fmt.Errorf("gateway: SendPCM: rate changed from %d to %d within utterance %q", in, rate, utterance)
		}
		c.scratch = c.resampler.Resample(c.scratch[:0], samples)
		samples = c.scratch
	}
	return c.pacer.Write(AppendPCM(nil, f, samples))
}

// EndUtterance queues the end of the utterance behind its audio: a mark
// where the dialect has marks, whose echo ends the utterance in the Tracker.
func (c *Conn) EndUtterance(utterance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pacer == nil {
		return
	}
	if c.resampler != nil && c.queued == utterance {
		if tail := c.resampler.Flush(c.scratch[:0]); len(tail) > 0 {
			_ = c.pacer.Write(AppendPCM(nil, c.start.Format, tail))
		}
	}
	c.pacer.Mark(endPrefix + utterance)
	c.queued, c.resampler = "", nil
}

// Clear drops all queued audio, sends the dialect's clear where it has one,
// and returns what the caller heard of each unfinished utterance (a
// barge-in). Nothing queued before the call reaches the wire after it. ctx
// bounds the write; pass the connection's context.
func (c *Conn) Clear(ctx context.Context) ([]Progress, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if c.pacer != nil {
		c.pacer.Clear()
	}
	c.queued, c.resampler = "", nil
	s := c.start
	c.mu.Unlock()
	progress := c.tracker.Clear()
	if !c.caps.ClearEchoesMarks {
		c.tracker.DropPending()
	}
	if s == nil || !c.caps.Clear {
		return progress, nil
	}
	return progress, c.writeLocked(ctx, Command{Kind: KindClear, StreamID: s.StreamID})
}

// Hangup asks the gateway to end the call; ErrUnsupported for a dialect
// without such a command (close the link instead).
func (c *Conn) Hangup(ctx context.Context) error {
	if !c.caps.Hangup {
		return ErrUnsupported
	}
	s := c.Start()
	if s == nil {
		return ErrNotStarted
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.writeLocked(ctx, Command{Kind: KindHangup, StreamID: s.StreamID})
}

// Run sends queued audio and marks until ctx ends or a write fails. It
// waits for the stream's start first.
func (c *Conn) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.started:
	}
	c.mu.Lock()
	p := c.pacer
	c.mu.Unlock()
	return p.Run(ctx, func(ev pace.Event) error { return c.emit(ctx, p, ev) })
}

func (c *Conn) emit(ctx context.Context, p *pace.Pacer, ev pace.Event) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if ev.Gen != p.Generation() {
		return nil // taken off the queue before a clear
	}
	s := c.Start()
	if ev.Frame == nil {
		switch {
		case strings.HasPrefix(ev.Mark, beginPrefix):
			c.current = strings.TrimPrefix(ev.Mark, beginPrefix)
		case strings.HasPrefix(ev.Mark, endPrefix) && c.caps.Marks:
			name := c.tracker.Mark(strings.TrimPrefix(ev.Mark, endPrefix), true)
			return c.writeLocked(ctx, Command{Kind: KindMark, StreamID: s.StreamID, Mark: name})
		case strings.HasPrefix(ev.Mark, endPrefix):
			c.tracker.End(strings.TrimPrefix(ev.Mark, endPrefix))
		}
		return nil
	}
	if err := c.writeLocked(ctx, Command{Kind: KindAudio, StreamID: s.StreamID, Format: s.Format, Audio: ev.Frame}); err != nil {
		return err
	}
	c.tracker.Sent(c.current, c.FrameDuration())
	return nil
}

func (c *Conn) writeLocked(ctx context.Context, cmd Command) error {
	f, err := c.codec.Encode(c.out[:0], cmd)
	if err != nil {
		return err
	}
	c.out = f.Data
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	return c.link.WriteFrame(ctx, f)
}

// Tracker returns the connection's mark tracker. For a dialect without
// marks, its figures come from the playback clock alone.
func (c *Conn) Tracker() *Tracker { return c.tracker }

// Capabilities returns the dialect's capabilities.
func (c *Conn) Capabilities() Capabilities { return c.caps }

// FrameDuration is the audio in one outbound message of this stream
// (Capabilities.MessageDuration of its format); before the start, the
// dialect's FrameDuration.
func (c *Conn) FrameDuration() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frame == 0 {
		return c.caps.FrameDuration
	}
	return c.frame
}

// PacingStats returns the outbound pacing jitter so far.
func (c *Conn) PacingStats() pace.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pacer == nil {
		return pace.Stats{}
	}
	return c.pacer.Stats()
}

// Buffered returns how much outbound audio is waiting to be sent.
func (c *Conn) Buffered() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pacer == nil {
		return 0
	}
	return c.start.Format.Duration(c.pacer.Buffered())
}

// Close drops the link.
func (c *Conn) Close() error { return c.link.Close() }
