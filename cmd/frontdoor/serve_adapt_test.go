package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestSlotsFlag: -STAGE-slots takes a number, auto or auto:MIN-MAX where
// the stage has a signal, and refuses the rest naming the flag.
func TestSlotsFlag(t *testing.T) {
	parse := func(args ...string) (*serveSettings, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		set := serveFlags(fs)
		return set, fs.Parse(args)
	}
	set, err := parse("-model-slots", "auto:2-6", "-synth-slots", "auto", "-recognize-slots", "3", "-stage-order", "fair")
	if err != nil {
		t.Fatal(err)
	}
	if c := set.adapt.auto[session.StageModel]; c == nil || c.Min != 2 || c.Max != 6 || set.model.Slots != 6 || c.Initial != 6 {
		t.Fatalf("model: %+v, slots %d", c, set.model.Slots)
	}
	if c := set.adapt.auto[session.StageSynthesis]; c == nil || c.Min != defaultAutoMin || c.Max != defaultAutoMax {
		t.Fatalf("synthesis: %+v", c)
	}
	if set.adapt.auto[session.StageRecognize] != nil || set.recognize.Slots != 3 || set.adapt.order != stages.Fair {
		t.Fatalf("recognize %d, order %v", set.recognize.Slots, set.adapt.order)
	}
	for _, bad := range []string{"-session-slots=auto", "-model-slots=auto:0-4", "-model-slots=auto:5-4", "-model-slots=auto:x", "-model-slots=four", "-stage-order=lifo"} {
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestServeAdaptiveModelStage: with -model-slots auto the server's model
// gate (inside its decorators) takes the engine's observations, moves its
// limit, and shows it in the snapshot and in frontdoor_stage_limit.
func TestServeAdaptiveModelStage(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := &adaptSettings{auto: map[string]*adaptive.Config{session.StageModel: {Min: 2, Max: 10, Window: time.Second}}}
	clock := stagestest.NewClock(stagestest.Epoch)
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Config{Config: session.Config{
		Model: stages.Limits{Slots: 2, Waiting: 16, MaxAge: time.Hour}, Clock: clock, Logger: log, Registry: reg,
		NewGate:      a.newGate((*fleet)(nil).newGate(productPolicy, log), log),
		ModelBackend: stub.NewModel(stub.Settings{}), Synthesizer: stub.NewSynthesizer(stub.Settings{}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	g := srv.Gate(session.StageModel)
	o, ok := g.(interface {
		Observe(latency time.Duration, overloaded bool)
	})
	if !ok {
		t.Fatalf("the server's model gate %T does not take observations", g)
	}
	if err := g.Rotate(ctx, "call", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, d, err := g.Submit(ctx, stages.Job{ID: "t" + string(rune('a'+i)), Owner: "call", Generation: 1, Born: clock.Now()}); err != nil || d != stages.Queued {
			t.Fatal(d, err)
		}
	}
	for range 3 {
		for range 5 {
			o.Observe(100*time.Millisecond, false)
		}
		clock.Advance(time.Second)
	}
	o.Observe(100*time.Millisecond, false)
	sn, err := g.Snapshot(ctx)
	if err != nil || sn.Limits.Slots <= 2 || sn.Adaptive == nil || sn.Adaptive.Changes == 0 {
		t.Fatalf("snapshot %+v adaptive %+v, %v", sn.Limits, sn.Adaptive, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	shown := -1.0
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_stage_limit" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == session.StageModel {
				shown = m.GetGauge().GetValue()
			}
		}
	}
	if shown != float64(sn.Limits.Slots) {
		t.Fatalf("frontdoor_stage_limit{stage=model} = %v, want %d", shown, sn.Limits.Slots)
	}
	n, err := testutil.GatherAndCount(reg, "frontdoor_stage_limit_changes_total")
	if err != nil || n != 1 {
		t.Fatalf("frontdoor_stage_limit_changes_total: %d series, %v", n, err)
	}
}
