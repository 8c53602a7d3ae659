package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
)

// TestSecurityMediaEndpoints: /v1/webrtc needs a caller token like
// /v1/session and follows the origin policy; /v1/twilio, with an auth token
// configured, refuses an upgrade without a valid X-Twilio-Signature (403)
// and accepts Twilio's own.
func TestSecurityMediaEndpoints(t *testing.T) {
	t.Parallel()
	const twilioToken = "twilio-auth-token-for-tests-0001"
	public := "wss://frontdoor.example/v1/twilio"
	p := startServe(t, nil, "-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways",
		"-twilio-auth-token", twilioToken, "-twilio-public-url", public, "-webrtc-loopback-only")
	evil := bearer(keyAcme)
	evil.Set("Origin", "http://evil.example")
	for _, tc := range []struct {
		name, path string
		h          http.Header
		want       int
	}{
		{"webrtc without a token", "/v1/webrtc", nil, 401},
		{"webrtc with a bad token", "/v1/webrtc", bearer("not-a-key-at-all-000"), 401},
		{"webrtc with an operator key", "/v1/webrtc", bearer(keyOps), 403},
		{"webrtc cross-origin", "/v1/webrtc", evil, 403},
		{"twilio without a signature", "/v1/twilio", nil, 403},
		{"twilio with a forged signature", "/v1/twilio", http.Header{"X-Twilio-Signature": {twilio.Signature("wrong-token", public, nil)}}, 403},
		{"twilio signed for another URL", "/v1/twilio", http.Header{"X-Twilio-Signature": {twilio.Signature(twilioToken, "wss://other.example/v1/twilio", nil)}}, 403},
	} {
		_, resp, err := dial(t, p.ws(tc.path), tc.h)
		if err == nil || resp == nil || resp.StatusCode != tc.want {
			t.Errorf("%s: err %v, response %v; want %d", tc.name, err, resp, tc.want)
		}
	}
	// The right token opens the signalling socket; Twilio's own signature
	// opens the stream.
	if _, _, err := dial(t, p.ws("/v1/webrtc"), bearer(keyAcme)); err != nil {
		t.Errorf("webrtc with a caller key: %v", err)
	}
	if _, _, err := dial(t, p.ws("/v1/twilio"), http.Header{"X-Twilio-Signature": {twilio.Signature(twilioToken, public, nil)}}); err != nil {
		t.Errorf("twilio with a good signature: %v", err)
	}
	// No refused handshake reached the session stage.
	st := stagesView(t, "http://"+p.addr, keyOps)
	if o := num(ledger(st["session"]), "offered"); o > 1 { // the signed Twilio stream, at most
		t.Errorf("session stage offered %v after refused handshakes", o)
	}
}

// TestSecurityAudioLimits: caller audio over the frame size is answered
// too_large and the call goes on; faster than -audio-max-rate it is
// answered audio_rate and closed 1008, on /v1/session and on Twilio media.
func TestSecurityAudioLimits(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "-audio-max-frame", "1000", "-audio-max-rate", "4000", "-audio-window", "1s")
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 1001)); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c, "error"); m.Code != "too_large" {
		t.Fatalf("oversized audio frame: %q, want too_large", m.Code)
	}
	send(t, c, `{"type":"turn","id":"ok","text":"still here"}`)
	if m := next(t, c, "turn_end"); m.Disposition != "completed" {
		t.Fatalf("after an oversized frame: %+v", m)
	}
	for range 8 { // a second's allowance is 4000 bytes
		if c.Write(ctx, websocket.MessageBinary, make([]byte, 1000)) != nil {
			break
		}
	}
	if m := next(t, c, "error"); m.Code != "audio_rate" {
		t.Fatalf("fast audio: %q, want audio_rate", m.Code)
	}
	if got := closeCode(t, c); got != websocket.StatusPolicyViolation {
		t.Fatalf("fast audio: close %v, want 1008", got)
	}

	// Twilio media: the same limit on the stream's µ-law payloads (10 s of
	// audio sent at once).
	g, err := twiliotest.Dial(ctx, p.ws("/v1/twilio"), twiliotest.Options{Speed: -1, Chunk: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_ = g.SendSilence(ctx, 10*time.Second)
	ends := 0
	timeout := time.After(10 * time.Second)
	for ends < 2 {
		select {
		case m := <-p.logs:
			if m["msg"] == "call ended" && m["end"] == "audio_rate" {
				ends++
			}
		case <-timeout:
			t.Fatalf("%d calls ended audio_rate, want 2 (session and twilio)", ends)
		}
	}
}

// TestSecurityQuarantine: with -quarantine-after 1, a model backend whose
// cleanup overruns -cleanup-timeout is quarantined: /readyz 503 naming it,
// /v1/stages shows it closed and quarantined with the lease held, a new
// turn is refused closed with a prompt; when the late cleanup is confirmed
// the stage reopens.
func TestSecurityQuarantine(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "-quarantine-after", "1", "-cleanup-timeout", "200ms",
		"-stub-model-delay", "1h", "-stub-cleanup-delay", "2s")
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	send(t, c, `{"type":"turn","id":"t1","text":"hi"}`)
	for m := next(t, c, "disposition"); m.Stage != "model" || m.Disposition != "admitted"; m = next(t, c, "disposition") {
	}
	send(t, c, `{"type":"barge_in"}`)
	next(t, c, "interrupted")
	model := func() map[string]any { return stagesView(t, "http://"+p.addr, "")["model"] }
	waitFor(t, 3*time.Second, "quarantine", func() bool { return model()["quarantined"] == true })
	if m := model(); m["closed"] != true || num(m, "leased") != 1 || num(m, "cleanup_overdue") != 1 {
		t.Fatalf("quarantined model stage: closed %v leased %v overdue %v", m["closed"], m["leased"], m["cleanup_overdue"])
	}
	resp, err := http.Get(p.url("/readyz"))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 256)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body[:n]), "quarantined: model") {
		t.Fatalf("/readyz %d %q during quarantine", resp.StatusCode, body[:n])
	}
	send(t, c, `{"type":"turn","id":"t2","text":"hi"}`)
	if m := next(t, c, "prompt"); m.Stage != "model" {
		t.Fatalf("prompt %+v", m)
	}
	m := next(t, c, "turn_end")
	for m.Turn != "t2" {
		m = next(t, c, "turn_end")
	}
	if m.Disposition != "closed" {
		t.Fatalf("turn during quarantine: %+v, want closed", m)
	}
	waitFor(t, 5*time.Second, "reopen", func() bool { m := model(); return m["quarantined"] == false && num(m, "leased") == 0 })
	if got := status(t, "GET", p.url("/readyz"), "", nil); got != 200 {
		t.Fatalf("/readyz %d after the quarantine", got)
	}
}
