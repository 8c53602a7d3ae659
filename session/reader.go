package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/internal/listen"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// replyFormat is the call's audio format (hello.audio) and its reply
// framing: set by the reader at hello, read by whoever queues audio.
type replyFormat struct {
	media.Format
	span int // 20 ms frames in one binary frame of reply audio (hello.audio.frame_ms / 20)
}

func (c *Call) replyFormat() *replyFormat { return c.format.Load() }

// readLoop decodes client events until the caller is gone.
//
// It minds its goroutine's stack, which an idle call keeps for as long as
// it lasts. A reader waits for the next message deep in coder/websocket
// (about 1.7 KiB of stack under Conn.Read), so a transport that declares
// Capabilities.ReadNative (the WebSocket) is read in frames that hold no
// event (readNative) and the message is decoded and handled only once the
// wait has returned (handleMessage): the wait then
// fits a goroutine's starting stack (4 KiB). Decoding a JSON message does
// not (encoding/json alone takes about 2.2 KiB), and a stack that has grown
// never shrinks back while the wait uses that much of it; so after a text
// message the reader hands over to a fresh goroutine (on a starting stack)
// and ends, and a call that has gone quiet keeps a 4 KiB reader, not 8.
func (c *Call) readLoop(ctx context.Context, io *sync.WaitGroup) {
	for {
		var text bool
		var err error
		if c.caps.ReadNative != nil {
			text, err = c.readNative(ctx)
		} else {
			err = c.readEvent(ctx)
		}
		if err != nil {
			var pe *wire.ProtocolError
			if !errors.As(err, &pe) {
				c.stop(fmt.Errorf("%w: %w", errGone, err)) // err may say why (ErrTransferred)
				return
			}
			c.badInput(pe)
		}
		if text {
			io.Go(func() { c.readLoop(ctx, io) })
			return
		}
	}
}

// readEvent receives and handles one event of any Transport.
func (c *Call) readEvent(ctx context.Context) error {
	ev, err := c.t.Recv(ctx)
	if err != nil {
		return err
	}
	c.handle(ev)
	return nil
}

// readNative waits for a native message and handles it; its frame holds
// no event (readLoop). text reports a text message.
func (c *Call) readNative(ctx context.Context) (text bool, err error) {
	binary, data, err := c.caps.ReadNative(ctx)
	if err != nil {
		return false, err
	}
	return !binary, c.handleMessage(binary, data)
}

// handleMessage decodes and handles one native message. It is never
// inlined into readNative, whose frame would then hold the event while
// waiting for the next message.
//
//go:noinline
func (c *Call) handleMessage(binary bool, data []byte) error {
	ev, err := wire.DecodeMessage(binary, data)
	if err != nil {
		return err
	}
	c.handle(ev)
	return nil
}

func (c *Call) badInput(pe *wire.ProtocolError) {
	c.s.m.ProtocolErrs.WithLabelValues(pe.Code).Inc()
	_ = c.Send(c.ctx, &wire.ErrorMsg{Type: "error", Code: pe.Code, Message: pe.Message})
}

// handle takes one client event: hello, audio (every frame) and the
// Fallback's messages on the reader, the rest posted to the owner in
// order. (The owner gets no Data, which may be a reused buffer.)
func (c *Call) handle(ev wire.ClientEvent) {
	first := !c.greeted
	c.greeted = true
	switch ev.Kind {
	case wire.EventHello:
		if !first {
			c.badInput(wire.Errorf(wire.CodeOutOfOrder, "hello must be the first message"))
			return
		}
		c.format.Store(&replyFormat{Format: ev.Audio, span: spanOf(ev.FrameMS)})
	case wire.EventAudio:
		if c.audioAllowed(ev.Data) {
			c.hear(ev.Data)
		}
	case wire.EventOther: // the Fallback's (an offer's answer), none of the call's state
		if !c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c) {
			c.badInput(wire.Errorf(wire.CodeUnknownType, "unknown message type %q", ev.Type))
		}
	case wire.EventBargeIn:
		c.post(event{kind: evClient, ev: ev, at: c.now()})
	default:
		c.post(event{kind: evClient, ev: ev})
	}
}

// hear runs caller audio through voice activity detection: speech starting
// while a reply is being spoken barges in (the owner decides: evVoice), and
// speech that ended becomes a speech turn (without a recognizer, caller
// audio is accepted and ignored).
func (c *Call) hear(b []byte) {
	// A refused call is heard only while its offer waits for an answer
	// in words (answer.go).
	admitted := c.admitted.Load()
	if admitted && c.s.cfg.Recognizer == nil || !admitted && !c.listening() {
		return
	}
	if c.ears == nil {
		l, err := listen.New(c.replyFormat().Format)
		if err != nil {
			c.badInput(wire.Errorf(wire.CodeBadField, "caller audio: %v", err))
			return
		}
		c.ears = l
	}
	start, utts, ago, err := c.ears.Feed(b)
	if err != nil {
		c.badInput(wire.Errorf(wire.CodeBadField, "caller audio: %v", err))
		return
	}
	if len(utts) == 0 && !start {
		return // (most frames: no clock read)
	}
	now := c.s.cfg.Clock.Now()
	if start && admitted {
		c.post(event{kind: evVoice, at: now})
	}
	for i, u := range utts {
		if len(u.Samples) == 0 {
			continue
		}
		if c.listening() && c.ans.Take(u, admitted, now.Add(-ago[i])) || !admitted {
			continue
		}
		c.post(event{kind: evHeard, ev: wire.ClientEvent{Kind: wire.EventSpeech, Speech: u}, at: now.Add(-ago[i])})
	}
}
