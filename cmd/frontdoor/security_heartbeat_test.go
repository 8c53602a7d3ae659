package main

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/frontdoorhq/frontdoor/session/heartbeat"
)

// The default heartbeat finds a dead peer within what docs/SECURITY.md
// promises (30 s, its leases freed right after; the bound is 45 s).
func TestHeartbeatDefaultBound(t *testing.T) {
	if b := heartbeat.Default.Bound(); b <= 0 || b > 30*time.Second {
		t.Fatalf("default heartbeat bound %v, want within 30s", b)
	}
}

// TestSecurityDeadPeers: a WebSocket client that stops reading and sending
// (a vanished peer looks the same) is closed by the heartbeat and its
// session lease freed, on /v1/session and on /v1/twilio; a client that
// reads stays. Short -ws-ping-* values stand for the defaults.
func TestSecurityDeadPeers(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "-ws-ping-interval", "200ms", "-ws-ping-timeout", "300ms")
	base := "http://" + p.addr
	leased := func() float64 { return num(stagesView(t, base, "")["session"], "leased") }

	// A live caller: its WebSocket library answers pings while it reads.
	live, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, live, "session")
	live.CloseRead(context.Background())

	// A silent native caller: admitted, then never reads again.
	silent, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, silent, "session")

	// A silent Twilio stream: connected and start, then nothing read.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tw, _, err := websocket.Dial(ctx, p.ws("/v1/twilio"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tw.CloseNow()
	for _, m := range []string{`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
		`{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1",` +
			`"tracks":["inbound"],"customParameters":{},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`} {
		if err := tw.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "three calls admitted", func() bool {
		return num(stagesView(t, base, "")[""], "calls") == 3 && leased() == 3
	})
	start := time.Now()
	waitFor(t, 10*time.Second, "the silent calls to be dropped", func() bool {
		return num(stagesView(t, base, "")[""], "calls") == 1 && leased() == 1
	})
	t.Logf("silent peers dropped and their leases freed %v after all were admitted (interval 200ms, timeout 300ms)", time.Since(start).Round(time.Millisecond))
	// Several intervals on, the live caller is still there.
	time.Sleep(time.Second)
	if n := num(stagesView(t, base, "")[""], "calls"); n != 1 {
		t.Fatalf("%v calls after the live caller answered pings for 1s, want 1", n)
	}
	if err := live.Ping(ctx); err != nil {
		t.Fatalf("the live caller's connection: %v", err)
	}
}
