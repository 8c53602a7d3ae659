package stages_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestLimitsValidate: every bound is checked, and the error names each
// field it checks, Order included.
func TestLimitsValidate(t *testing.T) {
	ok := stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid limits: %v", err)
	}
	for name, l := range map[string]stages.Limits{
		"slots":          {Waiting: 1},
		"waiting":        {Slots: 1},
		"max age":        {Slots: 1, Waiting: 1, MaxAge: -1},
		"tombstones":     {Slots: 1, Waiting: 1, Tombstones: -1},
		"tenant waiting": {Slots: 1, Waiting: 1, TenantWaiting: -1},
		"order":          {Slots: 1, Waiting: 1, Order: stages.Fair + 1},
	} {
		err := l.Validate()
		if err == nil {
			t.Errorf("%s: invalid limits %+v accepted", name, l)
			continue
		}
		for _, field := range []string{"Slots", "Waiting", "MaxAge", "Tombstones", "TenantWaiting", "Order"} {
			if !strings.Contains(err.Error(), field+" ") {
				t.Errorf("%s: error %q does not name %s", name, err, field)
			}
		}
		if _, gerr := stages.NewGate(l, nil, nil); gerr == nil || gerr.Error() != err.Error() {
			t.Errorf("%s: NewGate error %v, want %v", name, gerr, err)
		}
		if _, gerr := stages.NewClaimGate(l, nil, nil); gerr == nil || gerr.Error() != err.Error() {
			t.Errorf("%s: NewClaimGate error %v, want %v", name, gerr, err)
		}
	}
}

// TestNewGatePolicy: WithPolicy reaches the controller: a semaphore
// baseline queues without bound where the product refuses Overloaded.
func TestNewGatePolicy(t *testing.T) {
	ctx := context.Background()
	var sem stages.Policy
	if err := sem.Set("semaphore"); err != nil || !sem.Baseline() {
		t.Fatalf("semaphore: %v, baseline %v", err, sem.Baseline())
	}
	if (stages.Policy(0)).Baseline() {
		t.Fatal("the zero Policy (frontdoor) is a baseline")
	}
	l := stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	for _, tc := range []struct {
		opts []stages.Option
		want stages.Disposition
	}{
		{nil, stages.Overloaded},
		{[]stages.Option{stages.WithPolicy(sem)}, stages.Queued},
	} {
		clk := clock.NewManual(t0)
		g, err := stages.NewGate(l, clk, slog.New(slog.DiscardHandler), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		var last stages.Disposition
		for _, id := range []string{"a", "b", "c"} {
			if err := g.Rotate(ctx, id, 0); err != nil { // an owner is known before it offers
				t.Fatal(err)
			}
			_, last, err = g.Submit(ctx, stages.Job{ID: id, Owner: id, Born: clk.Now()})
			if err != nil {
				t.Fatal(err)
			}
		}
		if last != tc.want {
			t.Errorf("opts %d: third offer %v, want %v", len(tc.opts), last, tc.want)
		}
		g.Stop()
	}
}

// TestClaimGateLocal: the in-process claim gate admits only on Claim,
// tells onResolve, and answers State and Close synchronously.
func TestClaimGateLocal(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	var resolved []string
	g, err := stages.NewClaimGate(stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second}, clk,
		func(id string, d stages.Disposition) { resolved = append(resolved, id+" "+d.String()) })
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	for _, o := range []string{"a", "b"} {
		if err := g.Rotate(ctx, o, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, d, err := g.Submit(ctx, stages.Job{ID: "a", Owner: "a", Born: clk.Now()}); err != nil || d != stages.Queued {
		t.Fatalf("submit: %v, %v", d, err)
	}
	if st, ok := g.State("a"); !ok || st != stages.Queued {
		t.Fatalf("state before the claim %v %v, want queued: a freed slot admits nothing", st, ok)
	}
	if d, id, err := g.Claim(ctx, ""); err != nil || d != stages.Admitted || id != "a" {
		t.Fatalf("claim: %v %q %v", d, id, err)
	}
	if st, _ := g.State("a"); st != stages.Active {
		t.Fatalf("state after the claim %v, want active", st)
	}
	g.Close()
	if _, d, _ := g.Submit(ctx, stages.Job{ID: "b", Owner: "b", Born: clk.Now()}); d != stages.Closed {
		t.Fatalf("submit after Close: %v, want closed", d)
	}
	if len(resolved) != 1 || resolved[0] != "a admitted" {
		t.Fatalf("onResolve told %v", resolved)
	}
}

// TestAdaptiveGateObserves: NewAdaptiveGate's gate takes observations
// through Observe (what the engine looks for) and shows its rule in the
// snapshot; a gate without a runtime slot limit is refused.
func TestAdaptiveGateObserves(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	g, err := stages.NewGate(stages.Limits{Slots: 4, Waiting: 4, MaxAge: time.Second}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := stages.NewAdaptiveGate(ctx, g, stages.AdaptiveConfig{Min: 2, Max: 8}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Stop()
	if _, ok := ag.(interface{ Observe(time.Duration, bool) }); !ok {
		t.Fatalf("%T takes no observations", ag)
	}
	sn, err := ag.Snapshot(ctx)
	if err != nil || sn.Adaptive == nil || sn.Adaptive.Config.Min != 2 || sn.Adaptive.Config.Max != 8 {
		t.Fatalf("snapshot %+v, %v", sn.Adaptive, err)
	}
	if _, err := stages.NewAdaptiveGate(ctx, noLimit{g}, stages.AdaptiveConfig{Min: 1, Max: 2}, clk, nil); err == nil {
		t.Fatalf("a gate without a slot limit: %v", err)
	}
}

// noLimit hides the gate's runtime slot limit.
type noLimit struct{ stages.Gate }
