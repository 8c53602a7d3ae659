package session

import (
	"context"

	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/refusal"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// The refusal contract lives in package session/refusal; these are its
// names as the engine's callers know them.
type (
	// Refusal describes work a stage turned away or let expire, a backend
	// that failed, or a session waiting in the queue.
	Refusal = refusal.Refusal
	// Sender is the call a Fallback speaks to.
	Sender = refusal.Sender
	// Fallback decides what a caller hears after a refusal or expiry, and
	// may offer alternatives.
	Fallback = refusal.Fallback
	// Prompts is the default Fallback: a truthful sentence per outcome.
	Prompts = refusal.Prompts
)

// PromptText is the default prompt for r (refusal.PromptText).
func PromptText(r Refusal) string { return refusal.PromptText(r) }

// sendPrompt queues p as one prompt's audio_start, frames of span 20 ms
// frames and audio_end, for premise (SendAudio); voice marks a transport's
// own line (Voice.Say).
func (c *Call) sendPrompt(ctx context.Context, id string, premise uint64, p *promptaudio.Prompt, span int, voice bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := &wire.AudioStartMsg{Type: "audio_start", Turn: id, Generation: c.gen.Load(), Encoding: string(p.Enc), Rate: p.Rate}
	if err := c.push(ctx, frame{premise: premise, voice: voice, msg: start}); err != nil {
		return err
	}
	for i := range p.Frames(span) {
		b, us := p.At(i, span)
		if err := c.push(ctx, frame{premise: premise, voice: voice, audio: b, ms: us}); err != nil {
			return err
		}
	}
	end := &wire.AudioEndMsg{Type: "audio_end", Turn: id, Generation: c.gen.Load(), AudioMS: p.SynthUS / 1000}
	return c.push(ctx, frame{premise: premise, voice: voice, end: true, msg: end})
}
