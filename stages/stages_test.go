package stages_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
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
		if _, gerr := claim.New(l, nil, nil); gerr == nil || gerr.Error() != err.Error() {
			t.Errorf("%s: claim.New error %v, want %v", name, gerr, err)
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
