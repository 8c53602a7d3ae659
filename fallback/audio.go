package fallback

import (
	"context"

	"github.com/frontdoorhq/frontdoor/fallback/promptaudio"
)

// Prompt audio is package fallback/promptaudio's; its names are kept here
// as aliases for the Service's callers.
type (
	Audio       = promptaudio.Audio
	Synthesizer = promptaudio.Synthesizer
)

// ErrNoSynthesizer: the Service was built without a synthesizer.
var ErrNoSynthesizer = promptaudio.ErrNoSynthesizer

// PromptAudio returns the speech for a prompt's text, rendered once
// outside the synthesis stage and cached (promptaudio.Cache.Get).
func (s *Service) PromptAudio(ctx context.Context, text string) (Audio, error) {
	return s.prompts.Get(ctx, text)
}

// PromptsReady reports whether every fixed prompt has been rendered.
func (s *Service) PromptsReady() bool { return s.prompts.Ready() }
