package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
)

// Adaptive stage limits and fair order (docs/ADMISSION.md): -STAGE-slots
// auto, or auto:MIN-MAX, for the recognize, model and synthesis stages;
// -stage-order fifo|fair for every stage.

// Default bounds of an adaptive limit given as plain "auto".
const (
	defaultAutoMin = 1
	defaultAutoMax = 64
)

// adaptSettings are the adaptive limits asked for, by stage name, and the
// order of every stage's queue.
type adaptSettings struct {
	auto  map[string]*adaptive.Config // by session stage name
	order stages.Order
}

func adaptFlags(fs *flag.FlagSet) *adaptSettings {
	a := &adaptSettings{auto: make(map[string]*adaptive.Config)}
	fs.Var(&a.order, "stage-order", "`order` in which each stage's waiting work takes a freed slot: fifo, or fair (the tenants with work waiting in turn, each tenant's oldest first; the -tenant-queue-share cap stays)")
	return a
}

// slotsFlag is -STAGE-slots: a number, or auto[:MIN-MAX] where the stage
// has a signal to adapt to. Get is the number (the initial limit for auto),
// so that the bounds check of the numeric flags applies.
type slotsFlag struct {
	l     *stages.Limits
	stage string // session stage name; "" where auto is not offered
	a     *adaptSettings
}

func (f *slotsFlag) String() string {
	if f.l == nil {
		return ""
	}
	if c := f.a.auto[f.stage]; f.stage != "" && c != nil {
		return fmt.Sprintf("auto:%d-%d", c.Min, c.Max)
	}
	return strconv.Itoa(f.l.Slots)
}

func (f *slotsFlag) Get() any { return f.l.Slots }

func (f *slotsFlag) Set(s string) error {
	rest, auto := strings.CutPrefix(s, "auto")
	if !auto {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("want a number, auto or auto:MIN-MAX")
		}
		f.l.Slots = n
		delete(f.a.auto, f.stage)
		return nil
	}
	if f.stage == "" {
		return fmt.Errorf("auto: this stage has no backend latency to adapt to; want a number")
	}
	lo, hi := defaultAutoMin, defaultAutoMax
	if rest != "" {
		b, ok := strings.CutPrefix(rest, ":")
		los, his, ok2 := strings.Cut(b, "-")
		var e1, e2 error
		lo, e1 = strconv.Atoi(los)
		hi, e2 = strconv.Atoi(his)
		if !ok || !ok2 || e1 != nil || e2 != nil {
			return fmt.Errorf("want auto or auto:MIN-MAX (auto:2-32)")
		}
	}
	if lo < 1 || hi < lo {
		return fmt.Errorf("auto:%d-%d: want 1 <= MIN <= MAX", lo, hi)
	}
	// The limit starts at the stage's default, within the bounds, and
	// probes from there.
	f.l.Slots = min(max(f.l.Slots, lo), hi)
	f.a.auto[f.stage] = &adaptive.Config{Min: lo, Max: hi, Initial: f.l.Slots}
	return nil
}

// apply sets every stage's order.
func (a *adaptSettings) apply(ls ...*stages.Limits) {
	for _, l := range ls {
		l.Order = a.order
	}
}

// newGate wraps the gates of the stages given auto in an adaptive limit,
// on whichever store newGate builds them (in process, or one limit in
// Redis for the fleet), and logs every move of a limit.
func (a *adaptSettings) newGate(newGate func(string, stages.Limits, clock.Clock) (stages.Gate, error), log *slog.Logger) func(string, stages.Limits, clock.Clock) (stages.Gate, error) {
	if len(a.auto) == 0 {
		return newGate
	}
	return func(name string, l stages.Limits, c clock.Clock) (stages.Gate, error) {
		cfg := a.auto[name]
		if cfg == nil {
			return newGate(name, l, c)
		}
		g, err := newGate(name, l, c)
		if err != nil {
			return nil, err
		}
		slog := log.With("stage", name)
		ag, err := adaptive.New(context.Background(), g, *cfg, c, func(ch adaptive.Change) {
			e := ch.Estimate
			slog.Info("stage limit", "from", ch.From, "to", ch.To, "reason", e.Reason,
				"min_latency", e.MinRTT, "latency", e.RTT, "gradient", e.Gradient, "samples", e.Samples, "overloaded", e.Overload)
		})
		if err != nil {
			g.Stop()
			return nil, fmt.Errorf("adaptive %s limit: %w", name, err)
		}
		sn, _ := ag.Snapshot(context.Background()) // the adaptive status is this gate's own, even when the store errs
		st := sn.Adaptive.Config
		slog.Info("adaptive stage limit", "min", st.Min, "max", st.Max, "initial", st.Initial, "window", st.Window)
		return ag, nil
	}
}

// sessionStageOf maps a stage's flag name to its session stage name.
var sessionStageOf = map[string]string{"recognize": session.StageRecognize, "model": session.StageModel, "synth": session.StageSynthesis}
