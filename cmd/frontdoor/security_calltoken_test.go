package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/session/guard"
)

// twilioStream opens a Twilio-style stream at path with the gateway's
// signature over the URL it was given, sends connected and start (naming
// paramTenant in customParameters, which must not matter), and answers
// pings from then on. On a refused upgrade it returns the status and the
// JSON code.
func twilioStream(t *testing.T, p *proc, authToken, public, path, paramTenant string) (c *websocket.Conn, status int, code string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	signed := public + strings.TrimPrefix(path, "/v1/twilio")
	h := http.Header{"X-Twilio-Signature": {twilio.Signature(authToken, signed, nil)}}
	c, resp, err := websocket.Dial(ctx, p.ws(path), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp == nil {
			t.Fatalf("%s: %v", path, err)
		}
		var body struct{ Code string }
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &body)
		return nil, resp.StatusCode, body.Code
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	for _, m := range []string{`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
		`{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1",` +
			`"tracks":["inbound"],"customParameters":{"tenant":"` + paramTenant + `"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	c.CloseRead(context.Background())
	return c, http.StatusSwitchingProtocols, ""
}

// mintToken runs `frontdoor token`.
func mintToken(t *testing.T, env []string, tenant string) string {
	t.Helper()
	cmd := exec.Command(buildOnce(t), "token", "-tenant", tenant, "-secret-env", "FD_CALL_SECRET")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("frontdoor token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestSecurityCallTokens: the tenant of a phone call comes from a signed,
// single-use token in its stream URL, never from customParameters; its
// calls count against the same per-tenant cap as its WebSocket callers
// (429 over it); a replayed, forged or missing token is refused 403; the
// Twilio signature is checked over the URL with its token.
func TestSecurityCallTokens(t *testing.T) {
	t.Parallel()
	jwtSecret := strings.Repeat("jwt-secret-", 4)
	env := []string{"FD_JWT=" + jwtSecret, "FD_CALL_SECRET=" + strings.Repeat("call-secret-", 4)}
	const authToken = "twilio-auth-token-for-tests-0002"
	const public = "wss://frontdoor.example/v1/twilio"
	p := startServe(t, env, "-auth", "jwt", "-jwt-secret-env", "FD_JWT", "-call-token-secret-env", "FD_CALL_SECRET",
		"-call-token-required", "-allow-open-gateways", "-tenant-sessions", "2", "-twilio-auth-token", authToken, "-twilio-public-url", public)
	j := &guard.JWT{Secret: []byte(jwtSecret)}
	jwtFor := func(tenant, role string) string {
		s, err := j.Sign(guard.Claims{Tenant: tenant, Roles: []string{role},
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	calls := func() float64 { return num(stagesView(t, "http://"+p.addr, jwtFor("ops", "operator"))[""], "calls") }

	// Two phone calls of acme fill its cap of 2, whatever customParameters
	// say.
	tok1 := mintToken(t, env, "acme")
	first, st, code := twilioStream(t, p, authToken, public, "/v1/twilio/"+tok1, "acme")
	if first == nil {
		t.Fatalf("acme's first call: %d %s", st, code)
	}
	if _, st, code := twilioStream(t, p, authToken, public, "/v1/twilio/"+mintToken(t, env, "acme"), "beta"); st != 101 {
		t.Fatalf("acme's second call: %d %s", st, code)
	}
	waitFor(t, 5*time.Second, "two phone calls", func() bool { return calls() == 2 })
	// A third phone call of acme, naming another tenant in its parameters:
	// 429.
	tok3 := mintToken(t, env, "acme")
	if _, st, code := twilioStream(t, p, authToken, public, "/v1/twilio/"+tok3, "beta"); st != 429 || code != "rate_limited" {
		t.Fatalf("acme's third call: %d %q, want 429 rate_limited", st, code)
	}
	// The same cap on the native transport: acme's WebSocket caller 429,
	// beta's admitted.
	if _, resp, _ := dial(t, p.ws("/v1/session"), bearer(jwtFor("acme", "caller"))); resp == nil || resp.StatusCode != 429 {
		t.Fatalf("acme's WebSocket caller with two phone calls up: %v, want 429", resp)
	}
	if c, _, err := dial(t, p.ws("/v1/session"), bearer(jwtFor("beta", "caller"))); err != nil {
		t.Fatalf("beta's caller: %v", err)
	} else if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("beta's caller: %q", m.Disposition)
	}

	// Replayed, forged, missing, wrongly signed: refused before the upgrade.
	forged := (&guard.CallTokens{Secret: []byte(strings.Repeat("x", 40))})
	ftok, _ := forged.Mint("acme", time.Minute)
	for _, c := range []struct {
		name, path, signedFor, code string
	}{
		{"replayed", "/v1/twilio/" + tok1, public, "call_token_replayed"},
		{"forged", "/v1/twilio/" + ftok, public, "bad_call_token"},
		{"missing", "/v1/twilio", public, "call_token_required"},
	} {
		if _, st, code := twilioStream(t, p, authToken, c.signedFor, c.path, ""); st != 403 || code != c.code {
			t.Errorf("%s token: %d %q, want 403 %s", c.name, st, code, c.code)
		}
	}
	// Signed for another URL: refused 403 before its token is spent, so the
	// token still works for the gateway that signs it.
	gamma := "/v1/twilio/" + mintToken(t, env, "gamma")
	if _, st, code := twilioStream(t, p, authToken, public+"/other", gamma, ""); st != 403 || code != "twilio_signature" {
		t.Errorf("signature over another URL: %d %q, want 403 twilio_signature", st, code)
	}
	// A signed GET without the upgrade (426) does not spend it either.
	req, _ := http.NewRequest("GET", p.url(gamma), nil)
	req.Header.Set("X-Twilio-Signature", twilio.Signature(authToken, public+strings.TrimPrefix(gamma, "/v1/twilio"), nil))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("a GET without the upgrade: %d, want 426", resp.StatusCode)
	}
	if _, st, code := twilioStream(t, p, authToken, public, gamma, ""); st != 101 {
		t.Errorf("the token after an unsigned attempt and a GET: %d %q, want it unspent", st, code)
	}

	// acme's call ends: its place is back, and a token minted by the
	// running server (operator role, its own tenant only) is accepted.
	first.CloseNow()
	waitFor(t, 5*time.Second, "acme's first call to end", func() bool { return calls() == 3 }) // acme's second, beta's, gamma's
	mint := func(tenant string) (int, string) {
		req, _ := http.NewRequest("POST", p.url(guard.CallTokenPath), strings.NewReader(`{"tenant":"`+tenant+`"}`))
		req.Header.Set("Authorization", "Bearer "+jwtFor("acme", "operator"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct{ Path string }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v.Path
	}
	if st, _ := mint("beta"); st != 403 {
		t.Fatalf("acme's operator minting for beta: %d, want 403", st)
	}
	st, path := mint("")
	if st != 200 || path == "" {
		t.Fatalf("POST %s: %d %q", guard.CallTokenPath, st, path)
	}
	minted, st, code := twilioStream(t, p, authToken, public, path, "")
	if st != 101 {
		t.Fatalf("acme's call with a server-minted token: %d %s", st, code)
	}
	// The token refused 429 above was not spent by its refusal: once acme
	// has room again, it admits the retry. The minted call is counted
	// first: closed before its session was admitted, "3 calls" would hold
	// at once while the guard still counted it against acme's cap.
	waitFor(t, 5*time.Second, "the server-minted call to be admitted", func() bool { return calls() == 4 })
	minted.CloseNow()
	waitFor(t, 5*time.Second, "the server-minted call to end", func() bool { return calls() == 3 })
	if _, st, code := twilioStream(t, p, authToken, public, "/v1/twilio/"+tok3, ""); st != 101 {
		t.Fatalf("the retry of the call refused 429: %d %q, want its token unspent", st, code)
	}
}

// TestSecurityOpenGateways: with -auth jwt, serve refuses to start while a
// gateway route admits calls from anyone, naming each route and the flag
// that closes it; -allow-open-gateways starts it with a warning, and so do
// the routes' credentials.
func TestSecurityOpenGateways(t *testing.T) {
	t.Parallel()
	env := []string{"FD_JWT=" + strings.Repeat("jwt-secret-", 4), "FD_GW=" + strings.Repeat("gw-", 8), "FD_CALL_SECRET=" + strings.Repeat("call-secret-", 4)}
	jwtArgs := []string{"-auth", "jwt", "-jwt-secret-env", "FD_JWT", "-call-token-secret-env", "FD_CALL_SECRET"}
	for _, tc := range []struct {
		name string
		args []string
		open []string // routes named in the refusal; none: it starts
	}{
		{"all open", nil, []string{"/v1/twilio", "/v1/plivo", "-gateway-token-env"}},
		{"gateways open", []string{"-call-token-required"}, []string{"/v1/plivo"}},
		{"twilio open", []string{"-gateway-token-env", "FD_GW"}, []string{"/v1/twilio"}},
		{"public audiosocket", []string{"-call-token-required", "-gateway-token-env", "FD_GW", "-audiosocket-listen", "0.0.0.0:0"}, []string{"AudioSocket"}},
		{"closed", []string{"-call-token-required", "-gateway-token-env", "FD_GW", "-audiosocket-listen", "127.0.0.1:0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, jwtArgs...), tc.args...)
			if tc.open == nil {
				startServe(t, env, args...)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, buildOnce(t), append([]string{"serve", "-listen", "127.0.0.1:0", "-data-dir", t.TempDir()}, args...)...)
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("serve with open gateway routes: %v, want it to refuse to start", err)
			}
			for _, want := range append(tc.open, "-allow-open-gateways") {
				if !strings.Contains(string(out), want) {
					t.Errorf("the refusal does not name %q:\n%s", want, out)
				}
			}
			// The explicit flag starts it, with a warning naming the routes.
			p := startServe(t, env, append(args, "-allow-open-gateways")...)
			deadline := time.After(5 * time.Second)
			for {
				select {
				case m := <-p.logs:
					if msg, _ := m["msg"].(string); m["level"] == "WARN" && strings.Contains(msg, "-allow-open-gateways") {
						return
					}
				case <-deadline:
					t.Fatal("no warning that gateway routes are open")
				}
			}
		})
	}
}

// TestSecurityGatewayIdentity: with -auth jwt and every gateway route
// closed by its credentials, 100 gateway streams from one address without
// the gateway token (half send a start without it, half send nothing)
// hold no session slot: the session stage is offered none of them. 10 of
// 10 callers with valid JWTs from another address are admitted meanwhile,
// and a gateway stream with the token is admitted too.
func TestSecurityGatewayIdentity(t *testing.T) {
	jwtSecret := strings.Repeat("jwt-secret-", 4)
	const gwToken = "gateway-token-for-identity-test"
	env := []string{"FD_JWT=" + jwtSecret, "FD_GW=" + gwToken, "FD_CALL_SECRET=" + strings.Repeat("call-secret-", 4)}
	p := startServe(t, env, "-auth", "jwt", "-jwt-secret-env", "FD_JWT", "-call-token-secret-env", "FD_CALL_SECRET",
		"-call-token-required", "-gateway-token-env", "FD_GW", "-session-slots", "12", "-tenant-sessions", "20")
	j := &guard.JWT{Secret: []byte(jwtSecret)}
	jwtFor := func(tenant, role string) string {
		s, err := j.Sign(guard.Claims{Tenant: tenant, Roles: []string{role},
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ops := jwtFor("ops", "operator")
	session := func() map[string]any { return stagesView(t, "http://"+p.addr, ops)["session"] }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The flood: 100 streams on /v1/plivo from 127.0.0.2, none with the
	// token. Those past the address's caps are refused at once; the rest
	// are closed at their start, or held without a slot until the start
	// timeout.
	attacker := fromAddr("127.0.0.2")
	var (
		wg                sync.WaitGroup
		opened, refused   atomic.Int64
		closedWithoutSlot atomic.Int64
	)
	for i := range 100 {
		wg.Go(func() {
			c, _, err := websocket.Dial(ctx, p.ws("/v1/plivo"), &websocket.DialOptions{HTTPClient: attacker})
			if err != nil {
				refused.Add(1)
				return
			}
			opened.Add(1)
			t.Cleanup(func() { c.CloseNow() })
			if i%2 == 0 {
				start := `{"event":"start","sequenceNumber":1,"start":{"callId":"c` + fmt.Sprint(i) + `","streamId":"s` + fmt.Sprint(i) +
					`","accountId":"a","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}},"extra_headers":"{}"}`
				_ = c.Write(ctx, websocket.MessageText, []byte(start))
				if _, _, err := c.Read(ctx); websocket.CloseStatus(err) == websocket.StatusPolicyViolation {
					closedWithoutSlot.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("flood: %d streams opened, %d refused at the door, %d closed at their start (1008)", opened.Load(), refused.Load(), closedWithoutSlot.Load())
	if opened.Load() == 0 || closedWithoutSlot.Load() == 0 {
		t.Fatalf("the flood never reached the gateway route (%d opened, %d closed at start)", opened.Load(), closedWithoutSlot.Load())
	}

	// Ten callers with valid tokens, from another address: all admitted,
	// while the flood's silent streams are still open.
	caller := fromAddr("127.0.0.3")
	for i := range 10 {
		c, _, err := websocket.Dial(ctx, p.ws("/v1/session"), &websocket.DialOptions{HTTPClient: caller, HTTPHeader: bearer(jwtFor(fmt.Sprintf("t%d", i), "caller"))})
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		t.Cleanup(func() { c.CloseNow() })
		if m := next(t, c, "session"); m.Disposition != "admitted" {
			t.Fatalf("caller %d: %q, want admitted", i, m.Disposition)
		}
	}
	// A gateway that proves itself gets a slot.
	h := http.Header{"Authorization": {"Bearer " + gwToken}}
	gw, _, err := websocket.Dial(ctx, p.ws("/v1/plivo"), &websocket.DialOptions{HTTPClient: fromAddr("127.0.0.4"), HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.CloseNow()
	start := `{"event":"start","sequenceNumber":1,"start":{"callId":"ok","streamId":"ok","accountId":"a","tracks":["inbound"],` +
		`"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}},"extra_headers":"{}"}`
	if err := gw.Write(ctx, websocket.MessageText, []byte(start)); err != nil {
		t.Fatal(err)
	}
	gw.CloseRead(context.Background())
	waitFor(t, 5*time.Second, "the authenticated gateway's call admitted", func() bool { return num(session(), "leased") == 11 })
	if offered := num(ledger(session()), "offered"); offered != 11 {
		t.Fatalf("the session stage was offered %v calls, want the 11 authenticated (none of the flood's)", offered)
	}
}
