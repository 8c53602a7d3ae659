package fallback

import (
	"context"
	"errors"
	"fmt"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
)

// Audio is rendered prompt speech: PCM16 samples at Rate a second.
type Audio struct {
	Rate    int
	Samples []int16
}

// Synthesizer renders text to speech, calling emit with consecutive chunks
// of audio at its native rate; emit may not keep a chunk's Samples after it
// returns. It is the session's synthesizer as seen from below: the
// composition root adapts it (session/offer.Synthesizer), so that package
// fallback knows nothing of the call engine above it.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, emit func(Audio) error) error
}

// ErrNoSynthesizer: the Service was built without a synthesizer.
var ErrNoSynthesizer = errors.New("fallback: no synthesizer for prompt audio")

// MaxPromptText bounds the text PromptAudio will render.
const MaxPromptText = 1000

// PromptAudio returns the speech for a prompt's text. Every fixed prompt
// (prompt.All) is rendered once in the background at start-up; any other
// text is rendered on first use. Rendering calls the synthesizer directly,
// outside the synthesis stage's controller, so a prompt is heard even
// while synthesis is the overloaded stage; concurrent requests for one
// text share one rendering. The cache keeps PromptCacheSize texts.
func (s *Service) PromptAudio(ctx context.Context, text string) (Audio, error) {
	if a, ok := s.audio.Get(text); ok {
		return a, nil
	}
	if s.synth == nil {
		return Audio{}, ErrNoSynthesizer
	}
	if len(text) > MaxPromptText {
		return Audio{}, fmt.Errorf("fallback: prompt text of %d bytes, at most %d", len(text), MaxPromptText)
	}
	f, err := s.flight(text)
	if err != nil {
		return Audio{}, err
	}
	select {
	case <-f.done:
		return f.audio, f.err
	case <-ctx.Done():
		return Audio{}, ctx.Err()
	}
}

// renderFlight is one rendering that concurrent callers share.
type renderFlight struct {
	done  chan struct{}
	audio Audio
	err   error
}

// flight joins the rendering of text, starting it if none runs. Rendering
// belongs to the service, not to the first caller: a caller who hangs up
// must not fail the others waiting. Close waits for it.
func (s *Service) flight(text string) (*renderFlight, error) {
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	if s.renderClosed {
		return nil, ErrClosed
	}
	if f := s.rendering[text]; f != nil {
		return f, nil
	}
	f := &renderFlight{done: make(chan struct{})}
	s.rendering[text] = f
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.audio, f.err = s.renderPrompt(s.ctx, text)
		s.renderMu.Lock()
		delete(s.rendering, text)
		s.renderMu.Unlock()
		close(f.done)
	}()
	return f, nil
}

func (s *Service) renderPrompt(ctx context.Context, text string) (Audio, error) {
	if a, ok := s.audio.Get(text); ok {
		return a, nil
	}
	var out Audio
	err := s.synth.Synthesize(ctx, text, func(a Audio) error {
		if out.Rate == 0 {
			out.Rate = a.Rate
		}
		if a.Rate != out.Rate {
			return fmt.Errorf("fallback: prompt audio changed rate from %d to %d", out.Rate, a.Rate)
		}
		out.Samples = append(out.Samples, a.Samples...)
		return nil
	})
	if err != nil {
		return Audio{}, fmt.Errorf("fallback: render prompt: %w", err)
	}
	s.audio.Add(text, out)
	return out, nil
}

// warm renders every fixed prompt, one at a time so that start-up does not
// compete with callers for the synthesizer.
func (s *Service) warm(ctx context.Context) {
	for _, p := range prompt.All() {
		if ctx.Err() != nil {
			return
		}
		if _, err := s.PromptAudio(ctx, p.Text); err != nil && ctx.Err() == nil {
			s.log.Warn("prompt audio not rendered ahead; will retry on first use", "stage", p.Stage, "reason", p.Reason, "err", err)
		}
	}
}

// PromptsReady reports whether every fixed prompt has been rendered.
func (s *Service) PromptsReady() bool {
	for _, p := range prompt.All() {
		if !s.audio.Contains(p.Text) {
			return false
		}
	}
	return true
}
