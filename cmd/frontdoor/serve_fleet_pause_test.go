package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// TestFleetPausedReplicaEndsItsCalls: two frontdoor serve processes on one
// real redis-server, -session-slots 2. Replica A holds both lines; B's two
// callers wait. A is paused (SIGSTOP) past the lease TTL: its leases run
// out on the Redis clock and B admits its callers. When A resumes
// (SIGCONT) it learns at once that its session leases were lost, and its
// calls hear the failed prompt and are closed with 1013: the fleet's live
// calls exceed the slots for less than one renewal interval (TTL/3).
func TestFleetPausedReplicaEndsItsCalls(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	bin := buildOnce(t)
	const ttl = 2 * time.Second
	args := []string{"-store", srv.URL(0), "-store-lease-ttl", ttl.String(), "-store-timeout", "500ms", "-drain-timeout", "1s",
		"-session-slots", "2", "-session-queue", "4", "-session-max-wait", "30s",
		"-synth", "stub", "-recognize", "stub", "-pace=false"}
	a, b := startReplica(t, bin, args...), startReplica(t, bin, args...)
	waitReady(t, 200, a, b)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var onA, onB []*fleetCall
	for range 2 {
		c, _ := dialCall(ctx, t, a)
		if c == nil {
			t.FailNow()
		}
		defer c.conn.CloseNow()
		if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
			t.Fatalf("A: %v %v", m, err)
		}
		onA = append(onA, c)
	}
	for range 2 {
		c, _ := dialCall(ctx, t, b)
		if c == nil {
			t.FailNow()
		}
		defer c.conn.CloseNow()
		if m, _, err := c.until("session", false); err != nil || m["disposition"] != "queued" {
			t.Fatalf("B: %v %v", m, err)
		}
		onB = append(onB, c)
	}

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// B admits its callers once A's leases ran out.
	for _, c := range onB {
		if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
			t.Fatalf("B after A's pause: %v %v", m, err)
		}
	}
	resumed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A's calls end: each stops talking and is told at once (the
	// session's failed prompt, no offer), then is closed with 1013.
	var over time.Duration
	for _, c := range onA {
		p, _, err := c.until("prompt", false)
		if err != nil || p["stage"] != "session" || p["reason"] != "failed" {
			t.Fatalf("A's call after resuming: %v %v", p, err)
		}
		over = max(over, time.Since(resumed))
	}
	for _, c := range onA {
		for {
			mt, b, err := c.conn.Read(ctx)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
					t.Fatalf("A's call closed with %v, want 1013", err)
				}
				break
			}
			if mt == websocket.MessageText && strings.Contains(string(b), `"offer"`) {
				t.Fatalf("an ending call was offered: %s", b)
			}
		}
	}
	t.Logf("A's calls stopped %v after it resumed (renewal interval %v); closed after %v", over, ttl/3, time.Since(resumed))
	if over > ttl/3 {
		t.Errorf("4 live calls against 2 slots for %v after A resumed, more than one renewal interval (%v)", over, ttl/3)
	}
	// B's calls talk on.
	for i, c := range onB {
		if d, err := c.turn("b" + string(rune('0'+i))); err != nil || d != "completed" {
			t.Fatalf("B's call: %s %v", d, err)
		}
	}
}
