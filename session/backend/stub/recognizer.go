package stub

import (
	"context"
	"fmt"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Recognizer is a deterministic backend.Recognizer: its transcript names the
// duration of the speech, "heard 1200 ms", and is empty for no audio.
type Recognizer struct{ *core }

// NewRecognizer returns a stub recognizer; it answers after SynthDelay.
func NewRecognizer(s Settings) *Recognizer {
	return &Recognizer{newCore(s)}
}

// Transcript returns what the stub recognizes in a.
func Transcript(a backend.Audio) string {
	if len(a.Samples) == 0 || a.Rate <= 0 {
		return ""
	}
	return fmt.Sprintf("heard %d ms", a.Duration().Milliseconds())
}

// Recognize implements backend.Recognizer.
func (r *Recognizer) Recognize(ctx context.Context, a backend.Audio) (string, error) {
	r.enter()
	defer r.exit()
	if err := r.wait(ctx, r.s.SynthDelay); err != nil {
		return "", r.stop(err)
	}
	if err := r.fail("recognize"); err != nil {
		return "", err
	}
	return Transcript(a), nil
}
