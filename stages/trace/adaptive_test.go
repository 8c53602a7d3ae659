package trace

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestRunFairSameLimitsIsExact: a stage recorded under Fair order (its
// "stage" line says so) replays exactly under its recorded limits.
func TestRunFairSameLimitsIsExact(t *testing.T) {
	fair := map[string]stages.Limits{"model": {Slots: 1, Waiting: 4, MaxAge: 700 * time.Millisecond, TenantWaiting: 3, Order: stages.Fair}}
	for seed := range uint64(20) {
		tr := recordWorkload(t, seed, fair, 120)
		if !bytes.Contains(tr, []byte(`"order":"fair"`)) {
			t.Fatal("the stage line does not record the order")
		}
		rep, err := Run(bytes.NewReader(tr), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Stages[0]
		if s.Limits.Order != stages.Fair || len(s.Changes) != 0 || *s.Before != s.After {
			t.Fatalf("seed %d: order %v, %d changes\nrecorded %+v\nreplayed %+v", seed, s.Limits.Order, len(s.Changes), *s.Before, s.After)
		}
	}
}

// TestRunFairChangesOrder: the same FIFO recording replayed under Fair
// order admits some work in another order, and the ledger still balances.
func TestRunFairChangesOrder(t *testing.T) {
	fifo := map[string]stages.Limits{"model": {Slots: 1, Waiting: 6, MaxAge: 5 * time.Second}}
	changed := 0
	for seed := range uint64(20) {
		rep, err := Run(bytes.NewReader(recordWorkload(t, seed, fifo, 120)), Options{Limits: func(_ string, l stages.Limits, _ bool) stages.Limits {
			l.Order = stages.Fair
			return l
		}})
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Stages[0]
		changed += len(s.Changes)
		if err := s.Final.Ledger.Check(s.Final.Queued, s.Final.Leased); err != nil {
			t.Fatal(err)
		}
	}
	if changed == 0 {
		t.Fatal("fair order changed no job in 20 workloads")
	}
}

// TestRunLimitLines: moves of the slot limit are recorded as "limit" lines
// and replay exactly under the recorded limits; under a fixed limit of its
// own the replay does not run them.
func TestRunLimitLines(t *testing.T) {
	var buf bytes.Buffer
	clock := stagestest.NewClock(t0)
	w, err := NewWriter(&buf, WriterOptions{Origin: t0, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	l := stages.Limits{Slots: 1, Waiting: 8, MaxAge: time.Minute}
	c, err := admit.New(l, w.Stage("model", l, admit.Frontdoor, true))
	if err != nil {
		t.Fatal(err)
	}
	d := admit.NewDispatcher(c, clock)
	if err := d.Rotate("o", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, disp, err := d.Submit(stages.Job{ID: fmt.Sprint("j", i), Owner: "o", Generation: 1, Born: clock.Now()}); err != nil || disp != stages.Queued {
			t.Fatal(disp, err)
		}
	}
	clock.Advance(100 * time.Millisecond)
	if _, err := d.SetSlots(0, 3); err != nil { // admits j1, j2
		t.Fatal(err)
	}
	for i := range 4 {
		clock.Advance(100 * time.Millisecond)
		if _, err := d.Release(fmt.Sprint("j", i)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if _, err := d.SetSlots(0, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.Stop()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte(`"op":"limit"`)); n != 2 {
		t.Fatalf("%d limit lines, want 2:\n%s", n, buf.String())
	}
	rep, err := Run(bytes.NewReader(buf.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Stages[0]; len(s.Changes) != 0 || *s.Before != s.After || s.Final.Limits.Slots != 1 {
		t.Fatalf("recorded limits: %d changes, final slots %d\nrecorded %+v\nreplayed %+v", len(s.Changes), s.Final.Limits.Slots, *s.Before, s.After)
	}
	rep, err = Run(bytes.NewReader(buf.Bytes()), Options{Limits: func(_ string, l stages.Limits, _ bool) stages.Limits {
		l.Slots = 2
		return l
	}})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Stages[0]; s.Final.Limits.Slots != 2 || s.After.PeakLeased > 2 {
		t.Fatalf("own limit: final slots %d, peak %d", s.Final.Limits.Slots, s.After.PeakLeased)
	}
}

// TestRunAdaptive: a recording made under one slot, replayed under an
// adaptive limit fed with its leases' holds, probes up within its bounds
// and admits more of the work the recording refused.
func TestRunAdaptive(t *testing.T) {
	tr := recordWorkload(t, 7, map[string]stages.Limits{"model": {Slots: 1, Waiting: 2, MaxAge: 2 * time.Second}}, 300)
	cfg := adaptive.Config{Min: 1, Max: 6, Window: 200 * time.Millisecond, MinSamples: 1}
	rep, err := Run(bytes.NewReader(tr), Options{Adaptive: func(stage string) *adaptive.Config { return &cfg }})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Stages[0]
	a := s.Adaptive
	if a == nil || len(a.Moves) == 0 || a.Max <= 1 || a.Max > 6 || a.Min < 1 {
		t.Fatalf("adaptive replay %+v", a)
	}
	if s.After.Admitted <= s.Before.Admitted || s.After.PeakLeased > a.Max {
		t.Fatalf("recorded %+v\nreplayed %+v (max limit %d)", *s.Before, s.After, a.Max)
	}
}
