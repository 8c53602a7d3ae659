package stub

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// FrameDuration is the length of one stub audio frame.
const FrameDuration = 20 * time.Millisecond

// Synthesizer is a deterministic backend.Synthesizer: FrameCount frames of
// 20 ms of a 440 Hz tone at Rate whatever the text, or WordFrames frames a
// word of it.
type Synthesizer struct {
	*core
	wave  tone
	clock *clock // emits frames FrameDelay apart, shared by every call
}

// NewSynthesizer returns a stub synthesizer with settings s.
func NewSynthesizer(s Settings) *Synthesizer {
	if s.FrameCount <= 0 {
		s.FrameCount = 10
	}
	if s.Rate <= 0 {
		s.Rate = 16000
	}
	s.FrameChunk = max(s.FrameChunk, 1)
	return &Synthesizer{core: newCore(s), wave: newTone(s.Rate, s.FrameChunk),
		clock: newClock(s.FrameDelay*time.Duration(s.FrameChunk), s.Clock)}
}

// Rate returns the sample rate of the audio it emits.
func (s *Synthesizer) Rate() int { return s.s.Rate }

// Synthesize implements backend.Synthesizer. The first frame is emitted
// at once; each next one at the call's next tick of a clock that every
// call of s shares, by the clock's goroutine (clock.run): FrameCount
// frames take about (FrameCount-1)·FrameDelay, and a thousand calls cost
// one timer and no goroutine wake-up per frame, as a streaming TTS
// client's reader emits what arrives. With a FrameChunk of k, each emit
// carries k frames (the last what is left) and waits k ticks' time for
// the next.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	s.enter()
	defer s.exit()
	if err := s.wait(ctx, s.s.SynthDelay); err != nil {
		return s.stop(err)
	}
	if err := s.fail("synthesize"); err != nil {
		return err
	}
	slot := s.clock.slot()
	frames := s.s.FrameCount
	if s.s.WordFrames > 0 {
		frames = s.s.WordFrames * max(len(strings.Fields(text)), 1)
	}
	if err := ctx.Err(); err != nil {
		return s.stop(err)
	}
	i := 0
	step := func() (bool, error) {
		if err := emit(backend.Audio{Rate: s.s.Rate, Samples: s.wave.frames(i, min(s.s.FrameChunk, frames-i))}); err != nil {
			return false, backend.EmitError("stub", "synthesize", err)
		}
		i += s.s.FrameChunk
		return i < frames, nil
	}
	if more, err := step(); err != nil {
		return s.stop(err)
	} else if !more {
		return nil
	}
	if err := s.clock.run(ctx, slot, step); err != nil {
		return s.stop(err)
	}
	return nil
}

// tone is a 440 Hz sine at about -12 dBFS, computed once: one period of
// the sampled wave (rate/gcd(440, rate) samples) followed by as many frames
// more, so that any frame is a contiguous copy.
type tone struct {
	n     int     // samples per frame
	chunk int     // frames one view may span
	wave  []int16 // period samples, then chunk frames more
}

func newTone(rate, chunk int) tone {
	n := rate * int(FrameDuration/time.Millisecond) / 1000
	period := rate / gcd(440, rate)
	w := make([]int16, period+n*chunk)
	for i := range w {
		w[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i%period)/float64(rate)))
	}
	return tone{n: n, chunk: chunk, wave: w}
}

// frame returns frame i of the tone, so that frames join without clicks:
// a view of the table, which emit's receiver reads and does not keep
// (backend.Synthesizer), capped so that an append to it copies.
func (t tone) frame(i int) []int16 { return t.frames(i, 1) }

// frames returns k frames of the tone from frame i, contiguous (k at most
// the chunk newTone was given).
func (t tone) frames(i, k int) []int16 {
	period := len(t.wave) - t.n*t.chunk
	off := i * t.n % period
	end := off + k*t.n
	return t.wave[off:end:end]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
