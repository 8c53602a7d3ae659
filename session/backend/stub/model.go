package stub

import (
	"context"
	"strings"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Model is a deterministic backend.Model: it echoes the words of the turn,
// one per delta, cycling until it has sent Tokens deltas; with
// Settings.Demo it is the demo agent and says DemoAnswer's words instead.
type Model struct{ *core }

// NewModel returns a stub model with settings s.
func NewModel(s Settings) *Model {
	if s.Tokens <= 0 {
		s.Tokens = 8
	}
	return &Model{newCore(s)}
}

// Reply implements backend.Model.
func (m *Model) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	m.enter()
	defer m.exit()
	if err := m.wait(ctx, m.s.ModelDelay); err != nil {
		return m.stop(err)
	}
	if err := m.fail("reply"); err != nil {
		return err
	}
	for i, delta := range m.Deltas(t.Text) {
		if i > 0 {
			if err := m.wait(ctx, m.s.TokenDelay); err != nil {
				return m.stop(err)
			}
		} else if err := ctx.Err(); err != nil {
			return m.stop(err)
		}
		if err := emit(delta); err != nil {
			return m.stop(backend.EmitError("stub", "reply", err))
		}
	}
	return nil
}

// Deltas returns the deltas the stub model replies to text with, in order,
// without waiting or failing (for tests that check what a caller received).
func (m *Model) Deltas(text string) []string {
	if m.s.Demo {
		words := strings.Fields(DemoAnswer(text))
		for i := 1; i < len(words); i++ {
			words[i] = " " + words[i]
		}
		return words
	}
	words := strings.Fields(text)
	if len(words) == 0 {
		words = []string{"ok"}
	}
	out := make([]string, m.s.Tokens)
	for i := range out {
		d := words[i%len(words)]
		if i > 0 {
			d = " " + d
		}
		if i == len(out)-1 || m.s.SentenceWords > 0 && (i+1)%m.s.SentenceWords == 0 {
			d += "."
		}
		out[i] = d
	}
	return out
}
