package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// premiseFlags: one line, one place to wait in, a 1 s wait, and a queued
// prompt of 5 s (the stub synthesizer renders every prompt as 250 frames).
var premiseFlags = []string{"-session-slots", "1", "-session-queue", "1", "-session-max-wait", "1s",
	"-synth", "stub", "-stub-frame-count", "250", "-stub-frame-delay", "0"}

// queuedExpiry dials a caller that is queued behind the held line and
// reads until its wait expires. It returns how long after its deadline
// (dial + 1 s, an upper bound: the server's clock starts after the
// handshake) `session` expired arrived, and fails t if any of the queued
// prompt's audio came after that message other than its audio_end, cut.
func queuedExpiry(ctx context.Context, t testing.TB, addr string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/session", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	var late time.Duration
	var expired, queuedAudio bool
	var seen []string
	for {
		mt, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v after %v", err, seen)
		}
		if mt == websocket.MessageBinary {
			if expired && queuedAudio {
				t.Fatalf("queued prompt audio after session expired: %v", seen)
			}
			seen = append(seen, "binary")
			continue
		}
		var m struct {
			Type, Disposition, Turn string
			Cut                     bool
		}
		_ = json.Unmarshal(b, &m)
		seen = append(seen, m.Type+":"+m.Disposition)
		switch {
		case m.Type == "audio_start" && !expired:
			queuedAudio = true
		case m.Type == "session" && m.Disposition == "expired":
			late, expired = time.Since(deadline), true
			if !queuedAudio {
				t.Fatalf("expired before the queued prompt's audio began: %v", seen)
			}
		case m.Type == "session" && m.Disposition != "queued":
			t.Fatalf("session %s: %v", m.Disposition, seen)
		case m.Type == "audio_end" && expired:
			if !m.Cut {
				t.Fatalf("the queued prompt played to its end after expiry: %v", seen)
			}
			return late
		case m.Type == "audio_end":
			t.Fatalf("the queued prompt ended before its wait: %v", seen)
		}
	}
}

// TestQueuedExpiryNotHeldBehindPrompt runs the binary with one line, one
// place to wait and a 1 s wait: a queued caller hears the 5 s queued
// prompt, and its `session` expired is not held behind that audio (it came
// 4 s late before control messages had a lane of their own): after it, no
// frame of the queued prompt, whose audio_end says it was cut.
func TestQueuedExpiryNotHeldBehindPrompt(t *testing.T) {
	t.Parallel()
	r := startReplica(t, buildOnce(t), premiseFlags...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, _ := dialCall(ctx, t, r)
	if holder == nil {
		t.FailNow()
	}
	defer holder.conn.CloseNow()
	if m, _, err := holder.until("session", true); err != nil || m["disposition"] != "admitted" {
		t.Fatalf("holder %v %v", m, err)
	}
	for range 3 {
		late := queuedExpiry(ctx, t, r.addr)
		t.Logf("session expired %v after the deadline", late)
	}
}

// BenchmarkQueuedExpiryLateness measures, on the binary over real
// WebSockets, how late a queued caller's `session` expired arrives after
// its deadline while the 5 s queued prompt plays: one queued caller per
// iteration (each waits its 1 s). Reported: p50 and p99 in ms.
//
//	go test -run '^$' -bench QueuedExpiryLateness -benchtime 100x ./cmd/frontdoor
func BenchmarkQueuedExpiryLateness(b *testing.B) {
	r := startReplica(b, buildOnce(b), premiseFlags...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder, _ := dialCall(ctx, b, r)
	if holder == nil {
		b.FailNow()
	}
	defer holder.conn.CloseNow()
	if m, _, err := holder.until("session", true); err != nil || m["disposition"] != "admitted" {
		b.Fatalf("holder %v %v", m, err)
	}
	var late []time.Duration
	b.ResetTimer()
	for b.Loop() {
		late = append(late, queuedExpiry(ctx, b, r.addr))
	}
	b.ReportMetric(float64(percentile(late, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(late, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(slices.Max(late))/1e6, "max-ms")
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
