package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/frontdoorhq/frontdoor/session/guard"
)

// The security suite runs against a real `frontdoor serve` process.

const (
	keyAcme  = "acme-caller-key-0001"
	keyBeta  = "beta-caller-key-0002"
	keyGamma = "gamma-caller-key-003"
	keyDelta = "delta-caller-key-004"
	keyAgent = "acme-agent-key-00005"
	keyOps   = "ops-operator-key-006"
)

func keysFile(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "keys")
	writeFile(t, f, "# tenant roles key\n"+
		"acme caller "+keyAcme+"\nbeta caller "+keyBeta+"\ngamma caller "+keyGamma+"\ndelta caller "+keyDelta+"\n"+
		"acme agent "+keyAgent+"\nops operator sha256:"+sha256Hex(keyOps)+"\n")
	return f
}

func status(t *testing.T, method, url, tok string, h http.Header) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestSecurityAPIKeys(t *testing.T) {
	p := startServe(t, nil, "-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways")

	// No, bad and wrong-role tokens: refused before the upgrade.
	for _, tc := range []struct {
		name, url string
		h         http.Header
		want      int
	}{
		{"no token", p.ws("/v1/session"), nil, 401},
		{"bad token", p.ws("/v1/session"), bearer("not-a-key-at-all-000"), 401},
		{"bad query token", p.ws("/v1/session?access_token=nope"), nil, 401},
		{"agent console with a caller key", p.ws("/v1/agents?agent=a1"), bearer(keyAcme), 403},
		{"agent console without a key", p.ws("/v1/agents?agent=a1"), nil, 401},
		{"operator key cannot call", p.ws("/v1/session"), bearer(keyOps), 403},
	} {
		_, resp, err := dial(t, tc.url, tc.h)
		if err == nil || resp == nil || resp.StatusCode != tc.want {
			t.Errorf("%s: err %v, response %v; want %d", tc.name, err, resp, tc.want)
		}
	}
	// No stage was touched by the refused calls.
	st := stagesView(t, "http://"+p.addr, keyOps)
	if o := num(ledger(st["session"]), "offered"); o != 0 {
		t.Errorf("session stage offered %v calls after refused handshakes, want 0", o)
	}

	// Operator APIs need the operator role.
	for _, tc := range []struct {
		path, tok string
		want      int
	}{
		{"/v1/stages", "", 401}, {"/v1/stages", keyAcme, 403}, {"/v1/stages", keyOps, 200},
		{"/metrics", "", 401}, {"/metrics", keyOps, 200},
		{"/v1/callbacks", "", 401}, {"/v1/callbacks", keyAgent, 403}, {"/v1/callbacks", keyOps, 200},
		{"/healthz", "", 200}, {"/", "", 200},
	} {
		if got := status(t, "GET", p.url(tc.path), tc.tok, nil); got != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.tok, got, tc.want)
		}
	}

	// Good tokens: header, query, subprotocol (the answer is one the
	// browser offered, never the empty one).
	c, _, err := dial(t, p.ws("/v1/session"), bearer(keyAcme))
	if err != nil {
		t.Fatal(err)
	}
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %q", m.Disposition)
	}
	send(t, c, `{"type":"turn","id":"t1","text":"hello"}`)
	if m := next(t, c, "turn_end"); m.Disposition != "completed" {
		t.Fatalf("turn_end %+v", m)
	}
	c.Close(websocket.StatusNormalClosure, "")
	c, _, err = dial(t, p.ws("/v1/session?access_token="+keyBeta), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	c.Close(websocket.StatusNormalClosure, "")
	for _, protos := range [][]string{{guard.ProtocolV1, guard.TokenProtocolPrefix + keyGamma}, {guard.TokenProtocolPrefix + keyGamma}} {
		c, _, err = dial(t, p.ws("/v1/session"), nil, protos...)
		if err != nil {
			t.Fatalf("subprotocol token %v: %v", protos, err)
		}
		if got := c.Subprotocol(); got != protos[0] {
			t.Errorf("subprotocol %q, want %q", got, protos[0])
		}
		next(t, c, "session")
		c.Close(websocket.StatusNormalClosure, "")
	}
	// A foreign subprotocol alone is refused rather than silently dropped.
	if _, resp, err := dial(t, p.ws("/v1/session"), bearer(keyAcme), "chat"); err == nil || resp == nil || resp.StatusCode != 400 {
		t.Errorf("foreign subprotocol: %v %v", err, resp)
	}
	// The agent role opens the agent console.
	a, _, err := dial(t, p.ws("/v1/agents?agent=a1"), bearer(keyAgent))
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	a.Close(websocket.StatusNormalClosure, "")

	// Cross-origin is refused by default, with a good token too.
	h := bearer(keyAcme)
	h.Set("Origin", "http://evil.example")
	if _, resp, err := dial(t, p.ws("/v1/session"), h); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("cross-origin session: %v %v", err, resp)
	}
	h = bearer(keyAgent)
	h.Set("Origin", "http://evil.example")
	if _, resp, err := dial(t, p.ws("/v1/agents?agent=a2"), h); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("cross-origin agents: %v %v", err, resp)
	}
}

func TestSecurityAllowedOriginsAndOperatorListener(t *testing.T) {
	p := startServe(t, nil, "-allowed-origins", "app.example", "-operator-listen", "127.0.0.1:0")
	h := http.Header{"Origin": {"https://app.example"}}
	c, _, err := dial(t, p.ws("/v1/session"), h)
	if err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	next(t, c, "session")
	h.Set("Origin", "https://evil.example")
	if _, resp, err := dial(t, p.ws("/v1/session"), h); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("other origin: %v %v", err, resp)
	}
	// Operator paths live on the operator listener only.
	for _, path := range []string{"/v1/stages", "/metrics", "/v1/callbacks"} {
		if got := status(t, "GET", p.url(path), "", nil); got != 404 {
			t.Errorf("public %s: %d, want 404", path, got)
		}
		if got := status(t, "GET", "http://"+p.opAddr+path, "", nil); got != 200 {
			t.Errorf("operator %s: %d, want 200", path, got)
		}
	}
	if got := status(t, "GET", "http://"+p.opAddr+"/v1/session", "", nil); got != 404 {
		t.Errorf("operator listener serves /v1/session: %d", got)
	}
}

func TestSecurityJWT(t *testing.T) {
	secret := strings.Repeat("s3cret-", 6)
	p := startServe(t, []string{"FD_TEST_SECRET=" + secret}, "-auth", "jwt", "-jwt-secret-env", "FD_TEST_SECRET", "-allow-open-gateways")
	j := &guard.JWT{Secret: []byte(secret)}
	tok := func(exp time.Duration, roles ...string) string {
		s, err := j.Sign(guard.Claims{Tenant: "acme", Roles: roles,
			RegisteredClaims: jwt.RegisteredClaims{Subject: "u1", ExpiresAt: jwt.NewNumericDate(time.Now().Add(exp))}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	other := &guard.JWT{Secret: []byte(strings.Repeat("x", 40))}
	forged, _ := other.Sign(guard.Claims{Tenant: "acme", Roles: []string{"caller"},
		RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}})
	noExp, _ := j.Sign(guard.Claims{Tenant: "acme", Roles: []string{"caller"}})
	for name, tk := range map[string]string{"expired": tok(-time.Minute, "caller"), "forged": forged, "no exp": noExp, "no role": tok(time.Hour)} {
		_, resp, err := dial(t, p.ws("/v1/session"), bearer(tk))
		want := 401
		if name == "no role" {
			want = 403
		}
		if err == nil || resp == nil || resp.StatusCode != want {
			t.Errorf("%s token: %v %v, want %d", name, err, resp, want)
		}
	}
	c, _, err := dial(t, p.ws("/v1/session"), nil, guard.ProtocolV1, guard.TokenProtocolPrefix+tok(time.Hour, "caller"))
	if err != nil {
		t.Fatal(err)
	}
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %q", m.Disposition)
	}
}

// TestSecurityTenantCapVersusOverload: a tenant over its own cap gets 429;
// with -overload-http a full service gets 503 with Retry-After; neither is
// upgraded.
func TestSecurityTenantCapVersusOverload(t *testing.T) {
	p := startServe(t, nil, "-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways", "-tenant-sessions", "1",
		"-session-slots", "2", "-session-queue", "1", "-overload-http")
	hold := func(key, want string) {
		c, _, err := dial(t, p.ws("/v1/session"), bearer(key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if m := next(t, c, "session"); m.Disposition != want {
			t.Fatalf("%s: session %q, want %q", key, m.Disposition, want)
		}
	}
	hold(keyAcme, "admitted")
	_, resp, err := dial(t, p.ws("/v1/session"), bearer(keyAcme))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("acme's second call: %v %v, want 429 with Retry-After", err, resp)
	}
	hold(keyBeta, "admitted")
	hold(keyGamma, "queued") // the one waiting place
	_, resp, err = dial(t, p.ws("/v1/session"), bearer(keyDelta))
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("delta on a full service: %v %v, want 503 with Retry-After", err, resp)
	}
}

// TestSecurityTurnRate: a tenant over its turns per minute gets `error`
// rate_limited and close 1008.
func TestSecurityTurnRate(t *testing.T) {
	p := startServe(t, nil, "-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways", "-tenant-turns-per-minute", "1", "-tenant-turn-burst", "2")
	c, _, err := dial(t, p.ws("/v1/session"), bearer(keyAcme))
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	for i := range 2 {
		send(t, c, fmt.Sprintf(`{"type":"turn","id":"t%d","text":"hi"}`, i))
		next(t, c, "turn_end")
	}
	send(t, c, `{"type":"turn","id":"t9","text":"hi"}`)
	if m := next(t, c, "error"); m.Code != "rate_limited" {
		t.Fatalf("error %q, want rate_limited", m.Code)
	}
	if got := closeCode(t, c); got != websocket.StatusPolicyViolation {
		t.Fatalf("close %v, want 1008", got)
	}
}

// TestSecurityHostileFrames: malformed messages get `error` with a code and
// the call goes on; a message over the read limit closes 1009.
func TestSecurityHostileFrames(t *testing.T) {
	p := startServe(t, nil)
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	for _, tc := range []struct{ in, code string }{
		{`{"type":`, "bad_json"},
		{`{"type":"dance"}`, "unknown_type"},
		{`{"type":"turn","id":7,"text":"x"}`, "bad_field"},
		{`{"type":"turn","id":"x","text":"` + strings.Repeat("a", 5000) + `"}`, "too_large"},
		{`{"type":"hello"}`, "out_of_order"},
	} {
		send(t, c, tc.in)
		if m := next(t, c, "error"); m.Code != tc.code {
			t.Errorf("%.30s: %q, want %q", tc.in, m.Code, tc.code)
		}
	}
	send(t, c, `{"type":"turn","id":"ok","text":"still here"}`)
	if m := next(t, c, "turn_end"); m.Disposition != "completed" {
		t.Fatalf("after bad input: %+v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Write(ctx, websocket.MessageBinary, make([]byte, 65<<10))
	if got := closeCode(t, c); got != websocket.StatusMessageTooBig {
		t.Fatalf("oversized frame: close %v, want 1009", got)
	}
	// The server is still fine.
	if got := status(t, "GET", p.url("/healthz"), "", nil); got != 200 {
		t.Fatalf("healthz %d", got)
	}
}

// TestSecuritySlowClients: a client sending its headers byte by byte is cut
// off in bounded time; the connection over -max-conns is turned away; a
// WebSocket reader that stops reading is closed while the server's queue
// for it stays bounded.
func TestSecuritySlowClients(t *testing.T) {
	p := startServe(t, nil, "-read-header-timeout", "500ms", "-max-conns", "4",
		"-stub-frame-count", "20000", "-stub-tokens", "50")
	start := time.Now()
	sl, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	cut := make(chan time.Duration, 1)
	go func() {
		for _, b := range []byte("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)) {
			if _, err := sl.Write([]byte{b}); err != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	go func() {
		_, _ = io.Copy(io.Discard, sl) // returns when the server closes
		cut <- time.Since(start)
	}()
	select {
	case d := <-cut:
		t.Logf("slowloris cut after %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("a client trickling headers was not cut off")
	}

	// A request on a connection over -max-conns is answered 503 (the
	// connection is taken only to serve health checks, -probe-conns).
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond)
	over, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, _ = over.Write([]byte("GET /v1/session HTTP/1.1\r\nHost: x\r\n\r\n"))
	line, _ := bufio.NewReader(over).ReadString('\n')
	over.Close()
	if !strings.Contains(line, "503") {
		t.Fatalf("connection over -max-conns: %q, want 503", line)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil

	// A WebSocket reader that stops: closed by the server in bounded time.
	// The client's socket buffer is small so that the server meets the
	// stall soon (loopback buffers would otherwise absorb megabytes).
	small := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}}
	var c *websocket.Conn
	waitFor(t, 3*time.Second, "a free connection", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err = websocket.Dial(ctx, p.ws("/v1/session"), &websocket.DialOptions{HTTPClient: small})
		return err == nil
	})
	defer c.CloseNow()
	t.Logf("dialled after %v", time.Since(start))
	next(t, c, "session")
	send(t, c, `{"type":"turn","id":"big","text":"talk a lot"}`)
	// ... and never read again. The server gives up on it (1008) in
	// bounded time: the outbound write timeout (5s) after its buffers fill.
	queued := -1.0
	timeout := time.After(15 * time.Second)
	for queued < 0 {
		select {
		case m := <-p.logs:
			if m["msg"] == "caller not reading: closing (1008)" {
				queued = num(m, "queued_bytes_max")
			}
		case <-timeout:
			t.Fatal("a stalled reader was not closed")
		}
	}
	closing := time.Now()
	t.Logf("closed after %v", time.Since(start))
	if queued < 0 || queued > 1<<20+64<<10 {
		t.Fatalf("slow reader closed with %v bytes queued, want at most the outbound bound (1 MiB + a frame)", queued)
	}
	// The call ends at once: the connection is dropped, not held open for
	// a close handshake the stalled client cannot answer (5 s + 5 s).
	waitFor(t, 2*time.Second, "the stalled call to end", func() bool {
		return num(stagesView(t, "http://"+p.addr, "")[""], "calls") == 0
	})
	t.Logf("call gone %v after the slow-reader close", time.Since(closing).Round(time.Millisecond))
}

// TestSecurityTenantShare: one tenant's burst cannot take every waiting
// place: past its share it is refused over_share, and another tenant still
// finds room in the queue.
func TestSecurityTenantShare(t *testing.T) {
	p := startServe(t, nil, "-auth", "apikey", "-auth-keys", keysFile(t), "-allow-open-gateways", "-tenant-sessions", "20",
		"-session-slots", "1", "-session-queue", "4", "-tenant-queue-share", "0.5")
	var conns []*websocket.Conn
	for range 5 { // acme: one admitted, two queued (its share), two refused
		c, _, err := dial(t, p.ws("/v1/session"), bearer(keyAcme))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	got := map[string]int{}
	for _, c := range conns {
		got[next(t, c, "session").Disposition]++
	}
	if got["admitted"] != 1 || got["queued"] != 2 || got["overloaded"] != 2 {
		t.Fatalf("acme's burst: %v, want 1 admitted, 2 queued, 2 overloaded", got)
	}
	b, _, err := dial(t, p.ws("/v1/session"), bearer(keyBeta))
	if err != nil {
		t.Fatalf("beta refused after acme's burst: %v", err)
	}
	if m := next(t, b, "session"); m.Disposition != "queued" {
		t.Fatalf("beta: %q, want queued (not starved)", m.Disposition)
	}
	st := stagesView(t, "http://"+p.addr, keyOps)
	if n := num(ledger(st["session"])["refused"].(map[string]any), "over_share"); n != 2 {
		t.Fatalf("over_share %v, want 2", n)
	}
}

// TestSecurityKill9: kill -9 in the middle of load. Every callback a caller
// was told is queued is in the store after restart, and the restarted
// server's stages hold no lease twice (a clean ledger).
func TestSecurityKill9(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"-data-dir", data, "-model-slots", "1", "-model-queue", "1", "-stub-model-delay", "3s"}
	p := startServe(t, nil, args...)
	refs := map[string]bool{}
	for i := range 8 {
		c, _, err := dial(t, p.ws("/v1/session"), nil)
		if err != nil {
			t.Fatal(err)
		}
		next(t, c, "session")
		send(t, c, fmt.Sprintf(`{"type":"turn","id":"t%d","text":"zebra secret words"}`, i))
		if i < 2 {
			continue // these hold the model stage's slot and place
		}
		if m := next(t, c, "offer"); !contains(m.Kinds, "callback") {
			t.Fatalf("offer %v has no callback", m.Kinds)
		}
		send(t, c, fmt.Sprintf(`{"type":"callback","consent":true,"number":"+1555010%d"}`, i))
		m := next(t, c, "callback")
		if m.Disposition == "queued" {
			refs[m.Ref] = true
		}
	}
	if len(refs) == 0 {
		t.Fatal("no callback was queued")
	}
	if err := p.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	p.exited <- nil // for the cleanup
	// Logs carry no callback number and no transcript text at info level.
	for m := range p.logs {
		line, _ := json.Marshal(m)
		if strings.Contains(string(line), "555010") || strings.Contains(string(line), "zebra") {
			t.Errorf("log line carries a number or caller text: %s", line)
		}
	}

	out, err := exec.Command(buildOnce(t), "callbacks", "list", "-data-dir", data, "-json", "-status", "all").Output()
	if err != nil {
		t.Fatalf("callbacks list: %v", err)
	}
	var list []struct {
		Ref            string `json:"ticket"`
		Status, Number string
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("callbacks list: %v\n%s", err, out)
	}
	found := map[string]bool{}
	for _, c := range list {
		found[c.Ref] = true
		if strings.Contains(string(out), "+15550102") {
			t.Fatal("callbacks list shows a full number")
		}
	}
	for tk := range refs {
		if !found[tk] {
			t.Errorf("callback %s told queued is gone after kill -9", tk)
		}
	}

	q := startServe(t, nil, args...)
	st := stagesView(t, "http://"+q.addr, "")
	for name, s := range st {
		if name == "" {
			continue
		}
		if l := num(s, "leased"); l != 0 {
			t.Errorf("stage %s: %v leases held after restart", name, l)
		}
		if num(s, "cleanup_pending") != 0 {
			t.Errorf("stage %s: cleanup pending after restart", name)
		}
	}
	if cb := st["callback"]; int(num(cb, "queued")) != len(refs) {
		t.Errorf("callback stage queued %v after restart, want %d (each stored callback once)", num(cb, "queued"), len(refs))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
