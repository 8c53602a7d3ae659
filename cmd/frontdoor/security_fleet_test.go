package main

import (
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// TestSecurityFleetTenantCaps: two replicas on one real redis-server hold
// one set of caps for a tenant: its calls at once (2) count across both,
// so its third call is refused 429 on either; its turn budget (a burst of
// 2) is spent across both, so its third turn ends the call rate_limited
// wherever it runs; and a call token admitted by one replica is refused
// call_token_replayed by the other.
func TestSecurityFleetTenantCaps(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	env := []string{"FD_CALL_SECRET=" + strings.Repeat("call-secret-", 4)}
	args := []string{"-store", rs.URL(0), "-store-lease-ttl", "1s", "-store-timeout", "300ms",
		"-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways", "-call-token-secret-env", "FD_CALL_SECRET",
		"-tenant-sessions", "2", "-tenant-turns-per-minute", "1", "-tenant-turn-burst", "2"}
	a, b := startServe(t, env, args...), startServe(t, env, args...)
	// One client for the probes: each new one would leave a connection
	// open against the address's cap.
	probe := fromAddr("127.0.0.1")
	defer probe.CloseIdleConnections()
	for _, p := range []*proc{a, b} {
		waitFor(t, 10*time.Second, "the replica ready", func() bool {
			code, err := getWithin(probe, p.url("/readyz"), time.Second)
			return err == nil && code == 200
		})
	}
	admitted := func(p *proc, key string) *websocket.Conn {
		t.Helper()
		c, _, err := dial(t, p.ws("/v1/session"), bearer(key))
		if err != nil {
			t.Fatalf("%s: %v", p.addr, err)
		}
		if m := next(t, c, "session"); m.Disposition != "admitted" {
			t.Fatalf("%s: %q, want admitted", p.addr, m.Disposition)
		}
		return c
	}
	onA, onB := admitted(a, keyAcme), admitted(b, keyAcme)
	for _, p := range []*proc{a, b} {
		if _, resp, _ := dial(t, p.ws("/v1/session"), bearer(keyAcme)); resp == nil || resp.StatusCode != 429 {
			t.Fatalf("acme's third call, on %s: %v, want 429", p.addr, resp)
		}
	}
	admitted(b, keyBeta) // another tenant is not held by acme's cap

	// The turn budget: one turn on each replica, then the third ends its
	// call whichever replica serves it.
	for i, c := range []*websocket.Conn{onA, onB} {
		send(t, c, `{"type":"turn","id":"t`+string(rune('0'+i))+`","text":"hi"}`)
		next(t, c, "turn_end")
	}
	send(t, onA, `{"type":"turn","id":"t9","text":"hi"}`)
	if m := next(t, onA, "error"); m.Code != "rate_limited" {
		t.Fatalf("acme's third turn: error %q, want rate_limited", m.Code)
	}

	// A call token spent on one replica is spent for the fleet.
	tok := "/v1/twilio/" + mintToken(t, env, "gamma")
	if _, st, code := twilioStream(t, a, "unused", "wss://x/v1/twilio", tok, ""); st != 101 {
		t.Fatalf("the token on its first replica: %d %q", st, code)
	}
	if _, st, code := twilioStream(t, b, "unused", "wss://x/v1/twilio", tok, ""); st != 403 || code != "call_token_replayed" {
		t.Fatalf("the token on the other replica: %d %q, want 403 call_token_replayed", st, code)
	}
}
