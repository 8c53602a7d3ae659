package session

import (
	"log/slog"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Stage names as they appear in the protocol, metrics and /v1/stages.
const (
	StageSession   = "session"
	StageRecognize = "recognize"
	StageModel     = "model"
	StageSynthesis = "synthesis"
)

// stage is one named admission stage of the server (package
// internal/admission): its gate, closed while the engine drains or its
// backend is quarantined, its leases held until their work returns.
type stage = admission.Stage

// stageConfig is the admission configuration of the stage name: slot is
// its place in a call's rotations (Call.rotated), -1 for one shown only.
func (s *Engine) stageConfig(name string, slot int) admission.Config {
	cfg := admission.Config{Name: name, Slot: slot, Cleanup: s.cfg.CleanupTimeout, Op: s.cfg.StoreTimeout,
		Clock: s.cfg.Clock, Log: s.log, SignalAtEnd: name == StageRecognize,
		Metrics: admission.Metrics{Overdue: s.m.OverdueTotal, QuarantineRefused: s.m.QuarantineRefused,
			RotateErrors: s.m.RotateErrors, Quarantined: s.m.Quarantined}}

	if name != StageSession { // the backend stages have a quarantine policy
		cfg.QuarantineAfter = s.cfg.QuarantineAfter
	}
	return cfg
}

// AddView shows a stage whose work is admitted elsewhere (the fallback
// callback and handoff queues: their own controllers in process, their
// snapshots from Redis in fleet mode) in /v1/stages and /metrics. A drain
// leaves it open: callers refused while the server drains may still book a
// durable callback; its owner closes it.
func (s *Engine) AddView(name string, v stages.View) {
	st := admission.NewView(v, s.stageConfig(name, -1))
	s.mu.Lock()
	s.extra = append(s.extra, st)
	s.mu.Unlock()
}

// LocalGate returns the in-process gate of one stage (stages.NewGate):
// limits l (the frontdoor policy, unless opts choose a baseline with
// stages.WithPolicy), its time owned on clk. An error of its take goes to
// log; its count is in the stage's snapshot (TakeErrors) and in /metrics.
func LocalGate(l stages.Limits, clk clock.Clock, log *slog.Logger, opts ...stages.Option) (stages.Gate, error) {
	g, err := stages.NewGate(l, clk, log, opts...)
	if err != nil {
		return nil, err
	}
	return g, nil
}
