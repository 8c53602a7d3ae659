package session

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// failingGate is a stage's gate whose store fails its next operations of a
// kind, as a remote store does: errors that are not a caller's fault.
type failingGate struct {
	stages.Gate
	submit, rotate atomic.Int32 // failures left
}

var errStore = errors.New("store: reply malformed")

func (g *failingGate) Submit(ctx context.Context, job stages.Job) (stages.Pending, stages.Disposition, error) {
	if g.submit.Add(-1) >= 0 {
		return nil, 0, errStore
	}
	return g.Gate.Submit(ctx, job)
}

func (g *failingGate) Rotate(ctx context.Context, owner string, gen uint64) error {
	if g.rotate.Add(-1) >= 0 {
		return errStore
	}
	return g.Gate.Rotate(ctx, owner, gen)
}

// A store failure is never told as stale (issue 15): a failed offer is
// refused closed with the prompt that says the service is unavailable, a
// failed rotation is tried again before the call's next work goes to that
// stage, and the call goes on once the store answers.
func TestStoreErrorsStayTrue(t *testing.T) {
	model := &failingGate{}
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			g, err := LocalGate(l, clk, slog.New(slog.DiscardHandler))
			if name != StageModel || err != nil {
				return g, err
			}
			model.Gate = g
			return model, nil
		}
	})
	a := r.Admitted()

	// The offer fails: closed, with the closed prompt, never stale.
	model.submit.Store(1)
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := sessiontest.LastOf(all, "turn_end"); end.Disposition != "closed" || end.Stage != StageModel {
		t.Fatalf("turn with a failing store: %v %+v", sessiontest.Types(all), end)
	}
	if p := sessiontest.LastOf(all, "prompt"); p.Text != PromptText(Refusal{Stage: StageModel, Disposition: stages.Closed}) {
		t.Fatalf("prompt %+v", p)
	}

	// A barge-in whose rotation fails: the next turn rotates first and completes.
	model.rotate.Store(1)
	a.Send(map[string]any{"type": "barge_in"})
	a.Expect("interrupted")
	a.Send(map[string]any{"type": "turn", "id": "t2", "text": "x"})
	if end := sessiontest.LastOf(a.Until(sessiontest.IsType("turn_end")), "turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn after a failed rotation: %+v", end)
	}

	// A rotation that keeps failing: the turn is closed, not stale.
	model.rotate.Store(2)
	a.Send(map[string]any{"type": "barge_in"})
	a.Expect("interrupted")
	a.Send(map[string]any{"type": "turn", "id": "t3", "text": "x"})
	if end := sessiontest.LastOf(a.Until(sessiontest.IsType("turn_end")), "turn_end"); end.Disposition != "closed" {
		t.Fatalf("turn while rotation fails: %+v", end)
	}
	if sv := r.stage(StageModel); sv.Ledger.Refused.Stale != 0 {
		t.Fatalf("stale refusals in the ledger: %+v", sv.Ledger)
	}
}
