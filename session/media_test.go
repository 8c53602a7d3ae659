package session

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/wav"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// speech reads an espeak-ng fixture from media/testdata at rate.
func speech(t testing.TB, name string, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../media/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate == rate {
		return a.Samples
	}
	s, err := pcm.Resample(a.Samples, a.SampleRate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// historyModel wraps a model and keeps the history each turn was given.
type historyModel struct {
	backend.Model
	mu    sync.Mutex
	turns []backend.Turn
}

func (h *historyModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	h.mu.Lock()
	h.turns = append(h.turns, t)
	h.mu.Unlock()
	return h.Model.Reply(ctx, t, emit)
}

func (h *historyModel) seen() []backend.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]backend.Turn(nil), h.turns...)
}

// logRecords captures log records whose message starts with a prefix.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

func (l *logRecords) find(prefix string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if strings.HasPrefix(r["msg"].(string), prefix) {
			out = append(out, r)
		}
	}
	return out
}
