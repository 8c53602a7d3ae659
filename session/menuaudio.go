package session

import (
	"context"
	"errors"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// A transport that speaks lines of its own (a phone's keypad menu and the
// outcome of its answer, package session/telephony) says them through the
// call's writer like any prompt audio, not beside it: they are frames of
// the outbound queue, under the premise check (premise.go), so that one
// writer hands the line everything the caller hears and a line spoken for
// a state of the call that is over is cut like the Fallback's prompts.

// ErrNoVoice: Voice.Say was given no audio to say.
var ErrNoVoice = errors.New("session: no audio to say")

// Voice is the call's writer as a transport's own lines reach it
// (Capabilities.Voice).
type Voice interface {
	// Keep keeps the call's outbound queue open for a line about to be
	// said (rendered, then Say): a call that ends meanwhile drains the
	// line before its transport is closed. It reports false once the
	// queue is finished (the line would not be heard). release must be
	// called, after Say returns, whatever Say did.
	Keep() (release func(), ok bool)
	// Say queues a as the prompt utterance id (audio_start, frames,
	// audio_end through Transport.Send and SendAudio), spoken for the
	// premise of after, a message with a barrier (an *wire.OfferMsg,
	// *wire.FallbackMsg or *wire.ErrorMsg) or a *wire.PromptMsg already
	// sent, or for the call's present state when after is nil. It returns ErrPremiseGone
	// when that state ended before the line was all queued: the writer
	// cuts what was queued of it.
	Say(ctx context.Context, id string, after wire.Message, a backend.Audio) error
}

// Keep implements Voice.
func (c *Call) Keep() (func(), bool) { return c.out.HoldVoice() }

// Say implements Voice.
func (c *Call) Say(ctx context.Context, id string, after wire.Message, au backend.Audio) error {
	premise, err := c.out.SaysFor(after)
	if err != nil {
		return err
	}
	if au.Rate <= 0 || len(au.Samples) == 0 {
		return ErrNoVoice
	}
	rf := c.replyFormat()
	f, span := rf.Format, rf.span
	p, err := promptaudio.Shared.Get(au, f)
	if err != nil {
		return err
	}
	if err := c.sendPrompt(ctx, id, premise, p, span, true); err != nil {
		return err
	}
	if c.premise.Load() != premise {
		return ErrPremiseGone
	}
	return nil
}
