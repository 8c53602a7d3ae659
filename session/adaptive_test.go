package session

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// observing is a gate that takes observations (as an adaptive one does)
// and keeps them.
type observing struct {
	stages.Gate
	mu   sync.Mutex
	seen []observation
}

type observation struct {
	latency    time.Duration
	overloaded bool
}

func (o *observing) Observe(latency time.Duration, overloaded bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, observation{latency, overloaded})
}

func (o *observing) observed() []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observation(nil), o.seen...)
}

func observingGates(gates map[string]*observing) func(*Config, *stub.Settings) {
	return func(c *Config, _ *stub.Settings) {
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			g, err := LocalGate(l, clk, slog.New(slog.DiscardHandler))
			if err != nil || name == StageSession {
				return g, err
			}
			o := &observing{Gate: g}
			gates[name] = o
			return o, nil
		}
	}
}

// TestAdaptiveSignals: the engine feeds a stage gate that takes
// observations the latency of the stage's useful signal from the lease:
// the model's first token (its delay) and each sentence's first audio.
func TestAdaptiveSignals(t *testing.T) {
	gates := map[string]*observing{}
	r := newRig(t, observingGates(gates), func(_ *Config, s *stub.Settings) {
		s.ModelDelay, s.SynthDelay = 30*time.Millisecond, 20*time.Millisecond
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	end := sessiontest.LastOf(a.Until(sessiontest.IsType("turn_end")), "turn_end")
	if end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
	m, s := gates[StageModel].observed(), gates[StageSynthesis].observed()
	if len(m) != 1 || m[0].overloaded || m[0].latency < 30*time.Millisecond {
		t.Fatalf("model observations %+v, want one first token after at least 30ms", m)
	}
	if len(s) == 0 || s[0].overloaded || s[0].latency < 20*time.Millisecond {
		t.Fatalf("synthesis observations %+v, want first audio after at least 20ms", s)
	}
}

// TestAdaptiveOverloadSignal: a model answering 429/503 (overloaded) is
// reported to its stage's gate as an overload, with no latency.
func TestAdaptiveOverloadSignal(t *testing.T) {
	gates := map[string]*observing{}
	r := newRig(t, observingGates(gates), func(_ *Config, s *stub.Settings) {
		s.FailRate, s.FailKind = 1, backend.KindOverloaded
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	a.Until(sessiontest.IsType("turn_end"))
	sessiontest.WaitFor(t, "the overload observed", func() bool {
		m := gates[StageModel].observed()
		return len(m) == 1 && m[0].overloaded && m[0].latency == 0
	})
}
