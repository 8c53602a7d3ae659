package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// audioOut queues one turn's synthesized audio, or a prompt's, in the
// call's format after audio_start: its framing is promptaudio.Framer's;
// what is the call's here (the frames' generation and premise, the turn's
// audio time, audio_start and audio_end).
type audioOut struct {
	c       *Call
	t       *turn  // nil for prompt audio
	id      string // the turn id announced
	gen     uint64 // frames' generation; 0 for prompt audio (never dropped)
	premise uint64 // prompt audio: the premise it is spoken for (cut when it ends)
	fr      *promptaudio.Framer
	// startedAt is when the first audio was queued: with synthUS, when
	// the audio queued so far runs out (a streamed reply's next deadline).
	startedAt time.Time
	synthUS   int64
}

func (a *audioOut) emit(ctx context.Context, au backend.Audio) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	first, err := a.fr.Start(au.Rate)
	if err != nil {
		return err
	}
	if first {
		a.startedAt = a.c.now()
		msg := &wire.AudioStartMsg{Type: "audio_start", Turn: a.id, Generation: a.announce(), Encoding: string(a.fr.Encoding()), Rate: a.fr.Rate()}
		if err := a.c.push(ctx, frame{gen: a.gen, premise: a.premise, turn: a.t, msg: msg}); err != nil {
			return err
		}
	}
	us := int64(len(au.Samples)) * 1e6 / int64(au.Rate)
	a.synthUS += us
	if a.t != nil {
		a.t.synthUS.Add(us)
	}
	return a.fr.Write(au.Samples, a.frame(ctx))
}

// frame queues one of the framer's frames.
func (a *audioOut) frame(ctx context.Context) func(promptaudio.Frame) error {
	return func(f promptaudio.Frame) error {
		return a.c.push(ctx, frame{gen: a.gen, premise: a.premise, audio: f.Audio, pooled: f.Pooled, turn: a.t, ms: f.US})
	}
}

func (a *audioOut) finish(ctx context.Context) error {
	if !a.fr.Started() {
		return nil
	}
	if err := a.fr.Flush(a.frame(ctx)); err != nil {
		return err
	}
	return a.c.push(ctx, frame{gen: a.gen, premise: a.premise, turn: a.t, end: true, msg: &wire.AudioEndMsg{Type: "audio_end", Turn: a.id, Generation: a.announce(),
		AudioMS: a.synthUS / 1000}})
}

// spanOf is the 20 ms frames in a reply frame of frameMS milliseconds
// (hello.audio.frame_ms, already checked; 0 is 20 ms).
func spanOf(frameMS int) int {
	return max(frameMS/int(media.FrameDuration/time.Millisecond), 1)
}

// announce is the generation audio_start and audio_end name: the turn's,
// or the call's current one for prompt audio.
func (a *audioOut) announce() uint64 {
	if a.gen != 0 {
		return a.gen
	}
	return a.c.gen.Load()
}

// SendAudio queues prompt audio for the caller in the call's format
// (Sender). It belongs to no generation (a barge-in does not cut it) but
// to the premise of the prompt it speaks (nil: the last one sent): it is
// cut once the call's state has changed since that prompt was sent
// (premise.go), even while it was being rendered. Its frames are encoded
// once per rendering and format and shared by every call (prompts.go),
// whatever each call's frame length.
func (c *Call) SendAudio(ctx context.Context, turn string, prompt *wire.PromptMsg, au backend.Audio) error {
	rf := c.replyFormat()
	f, span := rf.Format, rf.span
	premise := c.spoken.Load()
	if prompt != nil && prompt.Premise() != 0 {
		premise = prompt.Premise()
	}
	a := &audioOut{c: c, id: turn, fr: promptaudio.NewFramer(f, span), premise: premise}
	if turn == "" {
		a.id = "prompt"
	}
	if au.Rate > 0 && len(au.Samples) > 0 {
		p, err := promptaudio.Shared.Get(au, f)
		if err != nil {
			return err
		}
		return c.sendPrompt(ctx, a.id, premise, p, span, false)
	}
	if err := a.emit(ctx, au); err != nil {
		return err
	}
	return a.finish(ctx)
}
