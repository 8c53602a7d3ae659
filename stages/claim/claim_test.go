package claim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestClaimGateLocal: the in-process claim gate admits only on Claim,
// tells onResolve, and answers State and Close synchronously.
func TestClaimGateLocal(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	var resolved []string
	g, err := claim.New(stages.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second}, clk,
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
	if st, _ := g.State("a"); st != claim.Active {
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

// TestDispositions: the claim results are stages.Dispositions like any
// other: distinct from the ones package stages names, printed and encoded
// by name (what the wire and the metrics' labels use), and decoded back.
func TestDispositions(t *testing.T) {
	server := []stages.Disposition{stages.Queued, stages.Admitted, stages.Overloaded, stages.Expired,
		stages.Stale, stages.OutOfOrder, stages.Closed, stages.Cancelled, stages.Completed, stages.Failed}
	for _, tc := range []struct {
		d    stages.Disposition
		name string
	}{{claim.Busy, "busy"}, {claim.Empty, "empty"}, {claim.Active, "active"}} {
		if tc.d.String() != tc.name {
			t.Errorf("%d prints %q, want %q", tc.d, tc.d, tc.name)
		}
		if tc.d.Refusal() {
			t.Errorf("%v counts as a refusal", tc.d)
		}
		for _, s := range server {
			if s == tc.d {
				t.Errorf("%v is also a server disposition", tc.d)
			}
		}
		b, err := tc.d.MarshalText()
		if err != nil || string(b) != tc.name {
			t.Fatalf("%v marshals to %q, %v", tc.d, b, err)
		}
		var back stages.Disposition
		if err := back.UnmarshalText(b); err != nil || back != tc.d {
			t.Fatalf("%q unmarshals to %v, %v", b, back, err)
		}
	}
}

// TestNewLimits: New refuses invalid limits with the error Limits.Validate
// gives, as stages.NewGate does.
func TestNewLimits(t *testing.T) {
	l := stages.Limits{Slots: 1}
	want := l.Validate()
	if want == nil {
		t.Fatal("limits without a queue validate")
	}
	if _, err := claim.New(l, nil, nil); err == nil || err.Error() != want.Error() {
		t.Fatalf("New: %v, want %v", err, want)
	}
	if !strings.Contains(want.Error(), "Waiting") {
		t.Fatalf("error %q does not name Waiting", want)
	}
}

// TestClaimWant: a claim for one piece of work admits it only at the head,
// and one no longer waiting is answered with its state.
func TestClaimWant(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	g, err := claim.New(stages.Limits{Slots: 2, Waiting: 2, MaxAge: time.Second}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	for _, id := range []string{"a", "b"} {
		if err := g.Rotate(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		if _, d, err := g.Submit(ctx, stages.Job{ID: id, Owner: id, Born: clk.Now()}); err != nil || d != stages.Queued {
			t.Fatalf("submit %s: %v, %v", id, d, err)
		}
	}
	if d, _, err := g.Claim(ctx, "b"); err != nil || d != stages.Queued {
		t.Fatalf("claim b behind a: %v, %v", d, err)
	}
	if d, _, _ := g.Claim(ctx, "a"); d != stages.Admitted {
		t.Fatalf("claim a: %v", d)
	}
	if d, _, _ := g.Claim(ctx, "a"); d != claim.Active {
		t.Fatalf("claim a again: %v, want active", d)
	}
	clk.Advance(2 * time.Second)
	if d, _, _ := g.Claim(ctx, "b"); d != stages.Expired {
		t.Fatalf("claim b past its deadline: %v, want expired", d)
	}
	if d, id, _ := g.Claim(ctx, ""); d != claim.Empty || id != "" {
		t.Fatalf("claim on an empty queue: %v %q", d, id)
	}
	if err := g.Rotate(ctx, "a", 0); !errors.Is(err, stages.ErrGeneration) {
		t.Fatalf("rotate to the same generation: %v", err)
	}
}
