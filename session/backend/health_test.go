package backend

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestHealth: a backend whose probe fails is not ready, with the probe's
// error as the reason, until a probe passes; one whose turns fail
// FailuresInARow times in a row is not ready until a good turn or a good
// probe; a backend without a probe (a stub) is ready. Probes are driven
// by hand: the interval is an hour.
func TestHealth(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	h := NewHealth(HealthConfig{Interval: time.Hour, FailuresInARow: 2})
	h.Watch("recognize", nil)
	h.Watch("model", func(ctx context.Context) error {
		if down.Load() {
			return errors.New("GET http://127.0.0.1:9/v1/models: connect: connection refused")
		}
		return nil
	})
	h.Watch("synthesis", func(ctx context.Context) error { return nil })
	ctx := context.Background()
	if r := h.Reasons(); len(r) != 0 {
		t.Fatalf("before any probe: %q", r)
	}
	h.Probe(ctx)
	if r := h.Reasons(); len(r) != 1 || r[0] != "model: GET http://127.0.0.1:9/v1/models: connect: connection refused" {
		t.Fatalf("model down: %q", r)
	}
	if err := h.Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "model: GET") {
		t.Fatalf("Ready = %v", err)
	}
	down.Store(false)
	h.Probe(ctx)
	if err := h.Ready(ctx); err != nil {
		t.Fatalf("model back: %v", err)
	}

	// Turns that keep failing, on a backend whose probe passes.
	boom := &Error{Kind: KindUnavailable, Backend: "x", Op: "reply", Err: errors.New("boom")}
	h.Observe("synthesis", boom)
	if err := h.Ready(ctx); err != nil {
		t.Fatalf("one failed turn: %v", err)
	}
	h.Observe("synthesis", nil) // a good turn ends the run
	h.Observe("synthesis", boom)
	h.Observe("synthesis", boom)
	if r := h.Reasons(); len(r) != 1 || !strings.HasPrefix(r[0], "synthesis: 2 turns failed in a row (last: ") {
		t.Fatalf("two failed turns in a row: %q", r)
	}
	h.Probe(ctx) // it answers: the server may get work again
	if r := h.Reasons(); len(r) != 0 {
		t.Fatalf("after a good probe: %q", r)
	}
	// A stub's turns count too.
	h.Observe("recognize", boom)
	h.Observe("recognize", boom)
	h.Observe("recognize", nil)
	if r := h.Reasons(); len(r) != 0 {
		t.Fatalf("after a good turn: %q", r)
	}
	h.Observe("unknown", boom) // not watched: ignored
}

// TestHealthProbeTimeout: Run probes once an Interval has passed on its
// clock, a probe that does not answer within the timeout is a reason of its
// own, and Run stops with its context.
func TestHealthProbeTimeout(t *testing.T) {
	clk := stagestest.NewClock(time.Unix(0, 0))
	h := NewHealth(HealthConfig{Interval: 20 * time.Millisecond, Timeout: 10 * time.Millisecond, Clock: clk})
	probed := make(chan struct{}, 1)
	h.Watch("model", func(ctx context.Context) error { probed <- struct{}{}; <-ctx.Done(); return ctx.Err() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	waitUntil(t, func() bool { return clk.Pending() == 1 }) // the interval
	clk.Advance(20*time.Millisecond - time.Nanosecond)
	select {
	case <-probed:
		t.Fatal("probed before the interval")
	default:
	}
	clk.Advance(time.Nanosecond)
	<-probed
	waitUntil(t, func() bool { return clk.Pending() == 1 }) // the probe's timeout
	clk.Advance(10 * time.Millisecond)
	waitUntil(t, func() bool { return len(h.Reasons()) > 0 })
	if r := h.Reasons(); !strings.Contains(r[0], "no answer within 10ms") {
		t.Fatalf("reasons %q", r)
	}
	cancel()
	<-done
}

// waitUntil waits for cond, which another goroutine makes true.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}
