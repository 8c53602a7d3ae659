package session

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// audioOut converts one turn's synthesized audio to the call's format and
// queues it in frames of span times 20 ms, after audio_start.
type audioOut struct {
	c       *Call
	t       *turn  // nil for prompt audio
	id      string // the turn id announced
	gen     uint64 // frames' generation; 0 for prompt audio (never dropped)
	premise uint64 // prompt audio: the premise it is spoken for (cut when it ends)
	format  media.Format
	span    int // 20 ms frames per binary frame (Call.span; 0 is 1)
	started bool
	// startedAt is when the first audio was queued: with synthUS, when
	// the audio queued so far runs out (a streamed reply's next deadline).
	startedAt time.Time
	enc       media.Encoding
	rate      int
	rs        *pcm.Resampler
	buf       []int16
	synthUS   int64
}

func (a *audioOut) emit(ctx context.Context, au backend.Audio) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if au.Rate <= 0 {
		return fmt.Errorf("session: synthesizer audio without a rate: %w", backend.ErrMalformed)
	}
	if !a.started {
		a.started, a.startedAt = true, a.c.now()
		a.enc, a.rate = a.format.Encoding, a.format.SampleRate
		if a.enc == "" {
			a.enc = media.PCM16
		}
		if a.rate == 0 {
			a.rate = au.Rate
		}
		if a.rate != au.Rate {
			rs, err := pcm.NewResampler(au.Rate, a.rate)
			if err != nil {
				return err
			}
			a.rs = rs
		}
		msg := &wire.AudioStartMsg{Type: "audio_start", Turn: a.id, Generation: a.announce(), Encoding: string(a.enc), Rate: a.rate}
		if err := a.c.push(ctx, frame{gen: a.gen, premise: a.premise, turn: a.t, msg: msg}); err != nil {
			return err
		}
	}
	a.synthUS += int64(len(au.Samples)) * 1e6 / int64(au.Rate)
	if a.t != nil {
		a.t.synthUS.Add(int64(len(au.Samples)) * 1e6 / int64(au.Rate))
	}
	samples := au.Samples
	if a.rs != nil {
		samples = a.rs.Resample(nil, samples)
	}
	a.buf = append(a.buf, samples...)
	return a.flush(ctx, false)
}

// flush queues whole frames, and with all, the remainder.
func (a *audioOut) flush(ctx context.Context, all bool) error {
	n := promptaudio.FrameSamples(a.rate, a.span)
	i := 0
	for ; len(a.buf)-i >= n || (all && i < len(a.buf)); i += n {
		s := a.buf[i:min(i+n, len(a.buf))]
		dst, pooled := promptaudio.FrameBuf(promptaudio.EncodedLen(a.enc, len(s)))
		b := promptaudio.EncodeFrame(dst, a.enc, s)
		f := frame{gen: a.gen, premise: a.premise, audio: b, pooled: pooled, turn: a.t, ms: int64(len(s)) * 1e6 / int64(a.rate)}
		if err := a.c.push(ctx, f); err != nil {
			return err
		}
	}
	a.buf = append(a.buf[:0], a.buf[min(i, len(a.buf)):]...)
	return nil
}

func (a *audioOut) finish(ctx context.Context) error {
	if !a.started {
		return nil
	}
	if a.rs != nil {
		a.buf = a.rs.Flush(a.buf)
	}
	if err := a.flush(ctx, true); err != nil {
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
	c.mu.Lock()
	f, span := c.format, c.span
	c.mu.Unlock()
	premise := c.spoken.Load()
	if prompt != nil && prompt.Premise() != 0 {
		premise = prompt.Premise()
	}
	a := &audioOut{c: c, id: turn, format: f, span: span, premise: premise}
	if turn == "" {
		a.id = "prompt"
	}
	if au.Rate > 0 && len(au.Samples) > 0 {
		p, err := promptaudio.Shared.Get(au, f)
		if err != nil {
			return err
		}
		return c.sendPrompt(ctx, a.id, premise, p, span)
	}
	if err := a.emit(ctx, au); err != nil {
		return err
	}
	return a.finish(ctx)
}
