package webrtc

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
)

// TestWebRTCSilentCaller: a caller whose peer goes silent (its ICE agent
// stopped, nothing said: no DTLS close, no hangup, its signalling socket
// still open) is found by ICE consent freshness: its call ends and its
// session lease is freed well within 30 s (pion declares the connection
// disconnected after 5 s without consent).
func TestWebRTCSilentCaller(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := r.browser(ctx)
	b.wait("session", has("session"))
	leased := func() int { v, _ := r.Engine.Stages().Stage(session.StageSession); return v.Leased }
	if leased() != 1 {
		t.Fatalf("%d leased, want the caller's", leased())
	}
	if err := b.peer.StopICE(); err != nil {
		t.Fatal(err)
	}
	went := time.Now()
	for r.Engine.Calls() != 0 || leased() != 0 {
		if ctx.Err() != nil {
			t.Fatalf("the silent caller still holds its call after %v", time.Since(went))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("silent WebRTC caller's lease freed %v after it went silent", time.Since(went).Round(100*time.Millisecond))
}
