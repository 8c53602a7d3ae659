package stub

import (
	"context"
	"math"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// FrameDuration is the length of one stub audio frame.
const FrameDuration = 20 * time.Millisecond

// Synthesizer is a deterministic backend.Synthesizer: FrameCount frames of
// 20 ms of a 440 Hz tone at Rate, whatever the text.
type Synthesizer struct{ *core }

// NewSynthesizer returns a stub synthesizer with settings s.
func NewSynthesizer(s Settings) *Synthesizer {
	if s.FrameCount <= 0 {
		s.FrameCount = 10
	}
	if s.Rate <= 0 {
		s.Rate = 16000
	}
	return &Synthesizer{newCore(s)}
}

// Rate returns the sample rate of the audio it emits.
func (s *Synthesizer) Rate() int { return s.s.Rate }

// Synthesize implements backend.Synthesizer.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	s.enter()
	defer s.exit()
	if err := wait(ctx, s.s.SynthDelay); err != nil {
		return s.stop(err)
	}
	if err := s.fail("synthesize"); err != nil {
		return err
	}
	n := s.s.Rate * int(FrameDuration/time.Millisecond) / 1000
	for i := range s.s.FrameCount {
		if i > 0 {
			if err := wait(ctx, s.s.FrameDelay); err != nil {
				return s.stop(err)
			}
		} else if err := ctx.Err(); err != nil {
			return s.stop(err)
		}
		if err := emit(backend.Audio{Rate: s.s.Rate, Samples: tone(i*n, n, s.s.Rate)}); err != nil {
			return s.stop(backend.EmitError("stub", "synthesize", err))
		}
	}
	return nil
}

// tone returns n samples of a 440 Hz sine at about -12 dBFS, starting at
// sample offset off so that frames join without clicks.
func tone(off, n, rate int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(off+i)/float64(rate)))
	}
	return out
}
