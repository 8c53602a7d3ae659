package session

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// stageUpper is the test's extra turn stage.
const stageUpper = "upper"

// withUpper puts one more step in the turn pipeline, between the model
// and synthesis: it upper-cases each sentence, admitted through a stage of
// its own (limits l), and holds a sentence with "hold" in it until hold
// closes. It is one entry in the list; the loop, the dispositions, the
// stops and the turn's end are the pipeline's.
func withUpper(t *testing.T, l stages.Limits, hold <-chan struct{}) pipeline {
	return func(s *Engine, steps []step) []step {
		g, err := LocalGate(l, s.cfg.Clock, s.log)
		if err != nil {
			t.Fatal(err)
		}
		st := admission.New(g, s.stageConfig(stageUpper, len(steps)+1))
		up := step{st: st, work: func(_ *stepRun, ctx context.Context, in string, out func(string)) error {
			if strings.Contains(in, "hold") {
				select {
				case <-hold:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			out(strings.ToUpper(in))
			return nil
		}}
		return slices.Insert(steps, len(steps)-1, up)
	}
}

// TestPipelineExtraStep: a stage added to the pipeline as one entry runs
// through the same loop: each sentence is admitted there under a lease
// of its own, its dispositions reach the caller, what it makes is what
// synthesis speaks, and its leases are released.
func TestPipelineExtraStep(t *testing.T) {
	const q = "two things"
	model, synth := newScriptModel(q), newRecSynth()
	r := newRig(t, withUpper(t, stages.Limits{Slots: 2, Waiting: 2, MaxAge: 5 * time.Second}, nil),
		func(c *Config, _ *stub.Settings) { c.ModelBackend, c.Synthesizer = model, synth })
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	model.write(t, q, "First one.")
	a.Until(sessiontest.IsType("audio_start"))
	model.write(t, q, " Second one.")
	close(model.scripts[q])
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
	if got, want := synth.said(), []string{"FIRST ONE.", "SECOND ONE."}; !slices.Equal(got, want) {
		t.Fatalf("synthesized %q, want %q", got, want)
	}
	if n := len(slices.DeleteFunc(slices.Clone(all), func(m sessiontest.Msg) bool { return !isDisp(stageUpper, "completed", 0)(m) })); n != 1 {
		t.Fatalf("%d upper completions after first audio, want 1: %v", n, sessiontest.Types(all))
	}
	r.released(StageModel, stageUpper, StageSynthesis)
	if s := r.stage(stageUpper); s.Ledger.Admitted != 2 {
		t.Errorf("upper admitted %d leases, want one per sentence", s.Ledger.Admitted)
	}
}

// TestPipelineExtraStepRefusal: the extra stage refuses a later sentence
// while the caller hears the first: the turn ends through the one exit,
// at that stage, with the prompt that says the rest was lost (not the
// refusal's own); the model still writing is stopped, its lease cancelled
// and held until it returned.
func TestPipelineExtraStepRefusal(t *testing.T) {
	const q = "long answer please"
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	model, synth, hold := newScriptModel(q), newRecSynth(), make(chan struct{})
	r := newRig(t, withUpper(t, stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}, hold),
		func(c *Config, _ *stub.Settings) { c.Clock, c.ModelBackend, c.Synthesizer = clock, model, synth })
	a, b := heardThenHeld(t, r, model, q, stageUpper, 0)
	clock.Advance(2 * time.Second) // past the turn's birth + the stage's max wait
	model.write(t, q, " Second part.")
	all := a.Until(sessiontest.IsType("turn_end"))
	if !slices.ContainsFunc(all, isDisp(stageUpper, "expired", 0)) {
		t.Fatalf("no expiry at the upper stage: %v", sessiontest.Types(all))
	}
	lostTheRest(t, all, stageUpper, stages.Expired)
	if n := len(slices.DeleteFunc(slices.Clone(all), func(m sessiontest.Msg) bool { return m.Type != "prompt" })); n != 1 {
		t.Fatalf("%d prompts, want the partial one alone: %v", n, sessiontest.Types(all))
	}
	if !slices.ContainsFunc(all, IsAudioEnd) {
		t.Fatalf("the heard part did not play out: %v", sessiontest.Types(all))
	}
	model.cancelled(t, r, q)
	if got := synth.said(); !slices.Equal(got, []string{"FIRST PART."}) {
		t.Fatalf("synthesized %q", got)
	}
	close(hold)
	b.Until(sessiontest.IsType("turn_end"))
	r.released(stageUpper)
}
