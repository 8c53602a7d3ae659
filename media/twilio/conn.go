package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pace"
)

// ErrNotStarted reports audio sent before the gateway's start message.
var ErrNotStarted = errors.New("twilio: stream not started")

// ConnOptions configure a Conn. Zero values take the defaults noted.
type ConnOptions struct {
	Dialect      Dialect
	WriteTimeout time.Duration // per outbound frame; default 5 s
	MaxBuffered  time.Duration // outbound audio that may wait in the pacer; default 60 s
	Clock        clock.Clock   // paces frames and tells what was heard; default clock.System
}

// Internal pacer marks bracket each utterance's audio so the sender knows
// which utterance a frame belongs to; they never reach the wire.
const (
	beginPrefix = "\x00begin:"
	endPrefix   = "\x00end:"
)

// Conn is one gateway connection: it reads typed messages and sends µ-law
// audio paced in 20 ms frames, a mark after each utterance, and clear on
// barge-in, all as JSON text frames. Read must be called from one goroutine;
// Run from another; the Send, EndUtterance and Clear methods from any.
type Conn struct {
	ws      *websocket.Conn
	d       Dialect
	timeout time.Duration
	pacer   *pace.Pacer
	tracker *Tracker

	sendMu  sync.Mutex // orders frames, marks and clear on the wire
	current string     // utterance of the frames being sent; under sendMu
	out     []byte     // the media message being written; under sendMu

	mu        sync.Mutex
	streamSID string
	queued    string // utterance whose audio was queued last
}

// Accept upgrades r to a WebSocket with a read limit of MaxMessageSize and
// compression off, and wraps it in a Conn. accept may be nil.
func Accept(w http.ResponseWriter, r *http.Request, accept *websocket.AcceptOptions, opts ConnOptions) (*Conn, error) {
	ws, err := websocket.Accept(w, r, accept)
	if err != nil {
		return nil, err
	}
	return NewConn(ws, opts), nil
}

// NewConn wraps an accepted WebSocket and sets its read limit.
func NewConn(ws *websocket.Conn, opts ConnOptions) *Conn {
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = time.Minute
	}
	ws.SetReadLimit(MaxMessageSize)
	return &Conn{
		ws: ws, d: opts.Dialect, timeout: opts.WriteTimeout,
		pacer: pace.New(pace.Config{
			FrameBytes:  media.Telephony.BytesPer(media.FrameDuration),
			Period:      media.FrameDuration,
			Fill:        g711.MulawSilence,
			MaxBuffered: media.Telephony.BytesPer(opts.MaxBuffered),
			Clock:       opts.Clock,
		}),
		tracker: NewTracker(opts.Clock),
	}
}

// Read returns the next message from the gateway. A start message sets the
// stream SID used for sending; a mark echo updates the Tracker and carries
// the utterance's Progress in Message.Progress. ctx should live as long as
// the connection: coder/websocket closes the connection when a Read's
// context ends. Bad input yields a *DecodeError and the connection stays up.
func (c *Conn) Read(ctx context.Context) (*Message, error) {
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, &DecodeError{Err: fmt.Errorf("%w: binary frame", ErrMalformed)}
	}
	m, err := Decode(c.d, data)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Start != nil:
		c.mu.Lock()
		c.streamSID = m.Start.StreamSID
		c.mu.Unlock()
	case m.Mark != nil:
		if p, ok := c.tracker.Echo(m.Mark.Name); ok {
			m.Progress = &p
		}
	}
	return m, nil
}

// StreamSID returns the stream's SID once start has been read.
func (c *Conn) StreamSID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streamSID
}

// SendAudio queues 8 kHz µ-law audio of the named utterance; it leaves in
// real time as 20 ms frames while Run runs. Chunks may be of any size.
func (c *Conn) SendAudio(utterance string, ulaw []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streamSID == "" {
		return ErrNotStarted
	}
	if c.queued != utterance {
		c.pacer.Mark(beginPrefix + utterance)
		c.queued = utterance
	}
	return c.pacer.Write(ulaw)
}

// SendPCM encodes 8 kHz PCM16 samples to µ-law and queues them like SendAudio.
func (c *Conn) SendPCM(utterance string, pcm []int16) error {
	return c.SendAudio(utterance, g711.EncodeMulaw(nil, pcm))
}

// EndUtterance queues a mark behind the utterance's audio; its echo ends the
// utterance in the Tracker.
func (c *Conn) EndUtterance(utterance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pacer.Mark(endPrefix + utterance)
	c.queued = ""
}

// Clear drops all queued audio, sends clear, and returns what the caller
// heard of each unfinished utterance (a barge-in). Nothing queued before the
// call reaches the wire after the clear. ctx bounds the write; pass the
// connection's context, since coder/websocket closes the connection when a
// write's context ends mid-write.
func (c *Conn) Clear(ctx context.Context) ([]Progress, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	c.pacer.Clear()
	c.queued = ""
	sid := c.streamSID
	c.mu.Unlock()
	progress := c.tracker.Clear()
	err := c.write(ctx, EncodeOutbound(c.d, Outbound{Event: EventClear, StreamSID: sid}))
	return progress, err
}

// Run sends queued audio and marks until ctx ends or a write fails.
func (c *Conn) Run(ctx context.Context) error {
	return c.pacer.Run(ctx, func(ev pace.Event) error { return c.emit(ctx, ev) })
}

func (c *Conn) emit(ctx context.Context, ev pace.Event) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if ev.Gen != c.pacer.Generation() {
		return nil // taken off the queue before a clear
	}
	sid := c.StreamSID()
	if ev.Frame == nil {
		switch {
		case strings.HasPrefix(ev.Mark, beginPrefix):
			c.current = strings.TrimPrefix(ev.Mark, beginPrefix)
		case strings.HasPrefix(ev.Mark, endPrefix):
			name := c.tracker.Mark(strings.TrimPrefix(ev.Mark, endPrefix), true)
			return c.write(ctx, EncodeOutbound(c.d, Outbound{Event: EventMark, StreamSID: sid, Mark: name}))
		}
		return nil
	}
	// coder/websocket copies the message before Write returns, so one
	// buffer serves every frame.
	c.out = appendOutbound(c.out[:0], c.d, Outbound{Event: EventMedia, StreamSID: sid, Payload: ev.Frame})
	if err := c.write(ctx, c.out); err != nil {
		return err
	}
	c.tracker.Sent(c.current, media.FrameDuration)
	return nil
}

func (c *Conn) write(ctx context.Context, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// Tracker returns the connection's mark tracker.
func (c *Conn) Tracker() *Tracker { return c.tracker }

// PacingStats returns the outbound pacing jitter so far.
func (c *Conn) PacingStats() pace.Stats { return c.pacer.Stats() }

// Buffered returns how much outbound audio is waiting to be sent.
func (c *Conn) Buffered() time.Duration { return media.Telephony.Duration(c.pacer.Buffered()) }

// Ping sends a ping and waits for its pong (answered while Read runs).
func (c *Conn) Ping(ctx context.Context) error { return c.ws.Ping(ctx) }

// CloseNow drops the connection without a close handshake (a peer that
// does not answer would not answer that either).
func (c *Conn) CloseNow() error { return c.ws.CloseNow() }

// Close closes the WebSocket with code and reason.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	return c.ws.Close(code, reason)
}
