package session

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// A call's outbound queue and its one writer are package
// session/internal/outbound: the call queues frames (push) and gives the
// writer its transport and what it does as frames are written (callLine).

// OutboundLimits bound what a call may have queued for the caller.
type OutboundLimits = outbound.Limits

// Errors of the outbound queue.
var (
	// ErrSlowReader: the caller stopped reading; the call is closed (1008).
	ErrSlowReader = outbound.ErrSlowReader
	// ErrPremiseGone: an `offer` was not queued because the call's state
	// changed since the prompt it belongs to (premise.go).
	ErrPremiseGone = outbound.ErrPremiseGone
)

// frame is one write a call queues: the fields of outbound.Frame that
// the call's producers set (a reply's audio, prompts, messages).
type frame struct {
	gen     uint64
	premise uint64
	bump    bool
	pooled  bool
	voice   bool
	msg     wire.Message
	audio   []byte
	turn    *turn
	end     bool
	ms      int64 // audio duration in microseconds
}

// push queues f (outbound.Queue.Push); a queue that found the caller not
// reading stops the call.
func (c *Call) push(ctx context.Context, f frame) error {
	of := outbound.Frame{Gen: f.gen, Premise: f.premise, Bump: f.bump, Pooled: f.pooled, Voice: f.voice,
		Msg: f.msg, Audio: f.audio, End: f.end, US: f.ms}
	if f.turn != nil { // (a nil *turn is no Turn)
		of.Turn = f.turn
	}
	return c.pushFrame(ctx, of)
}

func (c *Call) pushFrame(ctx context.Context, f outbound.Frame) error {
	err := c.out.Push(ctx, f)
	if errors.Is(err, ErrSlowReader) {
		c.stop(ErrSlowReader)
	}
	return err
}

// newOutbound is the call's queue, on the engine's clock, limits and
// pacer.
func (c *Call) newOutbound() *outbound.Queue {
	cfg := c.s.cfg
	return outbound.New(outbound.Config{Limits: cfg.Outbound, Clock: cfg.Clock, Gen: &c.gen,
		Premise: &c.premise, Spoken: &c.spoken, Stamps: c.caps.Voice != nil,
		Pacer: c.s.pacer, Pace: cfg.Pace, PaceLead: cfg.PaceLead, ReusableAudio: c.caps.ReusableAudio, Inline: c.caps.InlineAudio})
}

// callLine is the call as its writer sees it (outbound.Line).
type callLine Call

func (l *callLine) Send(ctx context.Context, msg wire.Message) error { return l.t.Send(ctx, msg) }

func (l *callLine) SendAudio(ctx context.Context, audio []byte) error {
	return l.t.SendAudio(ctx, audio)
}

func (l *callLine) Stale() { l.s.m.Stale.Inc() }

// Interrupting clears the caller's playback before `interrupted` is
// written, and notes what of the turn speaking was heard, in the message
// and in the call's history.
func (l *callLine) Interrupting(ctx context.Context, b *outbound.Barge, lastOld time.Duration) {
	c := (*Call)(l)
	speaking, _ := b.Speaking.(*turn)
	played := c.interruptPlayback(ctx, speaking) // clears the caller's playback first
	if im := b.Msg; speaking != nil {
		im.Heard = speaking.heard()
		if played != nil {
			im.Heard = played
		}
		c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: im.Heard.Text})
	}
	c.s.m.BargeToLast.Observe(lastOld.Seconds())
}

// Silenced and Sent make a turn the writer's (outbound.Turn).
func (t *turn) Silenced() bool { return t.silenced.Load() }

func (t *turn) Sent(us int64, end bool) {
	t.sentUS.Add(us)
	if end {
		t.markPlayed()
	}
}
