package offer

import (
	"context"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Synthesizer adapts the session's synthesizer to the one package fallback
// renders prompts with: fallback sits below the call engine and knows
// nothing of its types, so the composition root hands it this adapter. A
// nil s is a nil Synthesizer (PromptAudio then reports
// fallback.ErrNoSynthesizer).
func Synthesizer(s backend.Synthesizer) fallback.Synthesizer {
	if s == nil {
		return nil
	}
	return synthesizer{s}
}

type synthesizer struct{ s backend.Synthesizer }

func (a synthesizer) Synthesize(ctx context.Context, text string, emit func(fallback.Audio) error) error {
	return a.s.Synthesize(ctx, text, func(b backend.Audio) error { return emit(fallback.Audio(b)) })
}
