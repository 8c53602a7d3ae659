package guard

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestAPIKeys(t *testing.T) {
	k, err := ReadAPIKeys(strings.NewReader("# c\nacme caller,agent acme-key-0123456789\n\nops operator sha256:" +
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := k.Authenticate("acme-key-0123456789")
	if err != nil || id.Tenant != "acme" || !id.Has(RoleAgent) || id.Has(RoleOperator) {
		t.Fatalf("%+v %v", id, err)
	}
	if id, err := k.Authenticate("test"); err != nil || id.Tenant != "ops" { // sha256("test")
		t.Fatalf("digest key: %+v %v", id, err)
	}
	for _, tok := range []string{"", "acme-key-012345678", "nope"} {
		if _, err := k.Authenticate(tok); err == nil {
			t.Errorf("%q accepted", tok)
		}
	}
	for _, bad := range []string{"", "acme caller short", "acme king acme-key-0123456789", "a b", "ac/me caller acme-key-0123456789", "acme caller sha256:zz"} {
		if _, err := ReadAPIKeys(strings.NewReader(bad)); err == nil {
			t.Errorf("keys %q accepted", bad)
		}
	}
}

func TestJWT(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	now := clock.Now()
	j := &JWT{Secret: []byte(strings.Repeat("k", 32)), Issuer: "fd", Clock: clock}
	sign := func(c Claims) string {
		s, err := j.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := jwt.NewNumericDate(now.Add(time.Minute))
	good := sign(Claims{Tenant: "acme", Roles: []string{"caller"}, RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd", ExpiresAt: exp}})
	if id, err := j.Authenticate(good); err != nil || id.Tenant != "acme" || !id.Has(RoleCaller) {
		t.Fatalf("%+v %v", id, err)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, Claims{Tenant: "acme", RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd", ExpiresAt: exp}}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, tc := range []struct {
		name, tok string
		want      error
	}{
		{"expired", sign(Claims{Tenant: "acme", RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd", ExpiresAt: jwt.NewNumericDate(now.Add(-time.Minute))}}), ErrExpired},
		{"no exp", sign(Claims{Tenant: "acme", RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd"}}), ErrBadToken},
		{"issuer", sign(Claims{Tenant: "acme", RegisteredClaims: jwt.RegisteredClaims{Issuer: "x", ExpiresAt: exp}}), ErrBadToken},
		{"no tenant", sign(Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd", ExpiresAt: exp}}), ErrBadToken},
		{"bad role", sign(Claims{Tenant: "a", Roles: []string{"root"}, RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd", ExpiresAt: exp}}), ErrBadToken},
		{"alg none", none, ErrBadToken},
		{"garbage", "a.b.c", ErrBadToken},
		{"empty", "", ErrNoToken},
	} {
		if _, err := j.Authenticate(tc.tok); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// nbf and exp are read on the clock: a token not yet valid becomes
	// valid at nbf, and expires at exp, not a second later.
	early := sign(Claims{Tenant: "acme", Roles: []string{"caller"}, RegisteredClaims: jwt.RegisteredClaims{Issuer: "fd",
		NotBefore: jwt.NewNumericDate(now.Add(30 * time.Second)), ExpiresAt: exp}})
	if _, err := j.Authenticate(early); !errors.Is(err, ErrBadToken) || !errors.Is(err, jwt.ErrTokenNotValidYet) {
		t.Fatalf("before nbf: %v", err)
	}
	clock.Advance(30 * time.Second)
	if _, err := j.Authenticate(early); err != nil {
		t.Fatalf("at nbf: %v", err)
	}
	clock.Advance(30*time.Second - time.Second)
	if _, err := j.Authenticate(good); err != nil {
		t.Fatalf("a second before exp: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := j.Authenticate(good); !errors.Is(err, ErrExpired) {
		t.Fatalf("at exp: %v", err)
	}
}

// TestGuardGivesItsClock: a guard's CallTokens and JWT without a clock of
// their own read the guard's, so one clock runs token expiry and pacing.
func TestGuardGivesItsClock(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	j := &JWT{Secret: []byte(strings.Repeat("k", 32))}
	ct := &CallTokens{Secret: []byte(strings.Repeat("k", 32))}
	New(Config{Auth: j, CallTokens: ct, Clock: clock})
	if j.Clock != clock || ct.Clock != clock {
		t.Fatalf("JWT clock %v, CallTokens clock %v: want the guard's", j.Clock, ct.Clock)
	}
	own := stagestest.NewClock(stagestest.Epoch)
	ct2 := &CallTokens{Secret: []byte(strings.Repeat("k", 32)), Clock: own}
	New(Config{CallTokens: ct2, Clock: clock})
	if ct2.Clock != own {
		t.Fatal("a CallTokens' own clock was replaced")
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		share   string
		waiting int
		want    int
		err     bool
	}{
		{"0.5", 50, 25, false}, {"0.5", 1, 1, false}, {"0.01", 10, 1, false}, {"10", 50, 10, false},
		{"100", 50, 50, false}, {"0", 50, 0, false}, {"-1", 5, 0, true}, {"1.5", 5, 0, true}, {"x", 5, 0, true},
	} {
		s := Settings{TenantQueueShare: tc.share}
		got, err := s.Share(tc.waiting)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Share(%q, %d) = %d, %v", tc.share, tc.waiting, got, err)
		}
	}
}

func TestHandler(t *testing.T) {
	keys, err := ReadAPIKeys(strings.NewReader("acme caller acme-key-0123456789\nops operator ops-key-01234567890\n"))
	if err != nil {
		t.Fatal(err)
	}
	busy := false
	var got string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = tenant.CallerFrom(r.Context()).Tenant
		w.WriteHeader(299)
	})
	g := New(Config{Auth: keys, TenantSessions: 1, Busy: func() bool { return busy }})
	h := g.Handler(next, Public)
	do := func(path, tok string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		path, tok string
		hdr       []string
		want      int
	}{
		// A gateway carries no bearer token (its transport checks the
		// gateway token); an unknown /v1/ path is the mux's to refuse.
		{"/v1/plivo", "", nil, 299}, {"/v1/jambonz", "", nil, 299}, {"/v1/nosuch", "", nil, 299},
		{"/v1/session", "", nil, 401}, {"/v1/session", "acme-key-0123456789", nil, 299},
		{"/v1/session", "ops-key-01234567890", nil, 403}, {"/v1/stages", "ops-key-01234567890", nil, 299},
		{"/v1/stages", "acme-key-0123456789", nil, 403}, {"/healthz", "", nil, 299},
		{"/v1/session", "", []string{"Upgrade", "websocket", "Sec-WebSocket-Protocol", "frontdoor.token.acme-key-0123456789"}, 299},
		{"/v1/session", "acme-key-0123456789", []string{"Upgrade", "websocket", "Sec-WebSocket-Protocol", "chat"}, 400},
	} {
		if w := do(tc.path, tc.tok, tc.hdr...); w.Code != tc.want {
			t.Errorf("%s %q %v: %d, want %d", tc.path, tc.tok, tc.hdr, w.Code, tc.want)
		}
	}
	if got != "acme" {
		t.Errorf("tenant %q in the call's context", got)
	}
	w := do("/v1/session", "", "Upgrade", "websocket", "Sec-WebSocket-Protocol", "frontdoor.v1, frontdoor.token.acme-key-0123456789")
	if p := w.Header().Get("Sec-WebSocket-Protocol"); p != ProtocolV1 {
		t.Errorf("answered subprotocol %q", p)
	}
	busy = true
	if w := do("/v1/session", "acme-key-0123456789"); w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Errorf("busy: %d %v", w.Code, w.Header())
	}
	for _, d := range telephony.GatewayDialects {
		if w := do("/v1/"+d, ""); w.Code != 503 {
			t.Errorf("busy: /v1/%s answered %d, want 503: a gateway's call passes the overload check", d, w.Code)
		}
	}
	// The tenant cap: a call held open makes the next 429.
	busy = false
	hold, release := make(chan struct{}), make(chan struct{})
	h2 := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { close(hold); <-release }), Public)
	go func() {
		r := httptest.NewRequest("GET", "/v1/session", nil)
		r.Header.Set("Authorization", "Bearer acme-key-0123456789")
		h2.ServeHTTP(httptest.NewRecorder(), r)
	}()
	<-hold
	if w := do("/v1/session", "acme-key-0123456789"); w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Errorf("over the tenant cap: %d", w.Code)
	}
	close(release)
	for g.Sessions("acme") != 0 {
		time.Sleep(time.Millisecond)
	}
	// Operator paths move to the operator listener when it is separate.
	g = New(Config{OperatorSeparate: true})
	if w := httptest.NewRecorder(); true {
		g.Handler(next, Public).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 404 {
			t.Errorf("public /metrics with a separate operator listener: %d", w.Code)
		}
	}
}

func TestTurnRate(t *testing.T) {
	g := New(Config{TenantTurnsPerMinute: 60, TenantTurnBurst: 2})
	allow := g.turnAllower("acme")
	got := []bool{allow(), allow(), allow()}
	if !got[0] || !got[1] || got[2] {
		t.Fatal("burst of 2 not enforced")
	}
	if g.turnAllower("") != nil {
		t.Fatal("no tenant: no limit")
	}
}

func TestListenerMaxConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := ServerLimits{MaxConns: 1, ConnIdle: 200 * time.Millisecond}.Listen(ln)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		// Next Accept turns the second connection away, then ends with Close.
		_, _ = l.Accept()
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sc := <-accepted
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	line, _ := bufio.NewReader(b).ReadString('\n')
	if !strings.Contains(line, "503") || l.Refused() != 1 {
		t.Fatalf("second connection: %q (refused %d)", line, l.Refused())
	}
	// The idle connection is cut after ConnIdle: the read ends on its
	// deadline (the socket's, on the wall clock), not on the peer.
	if _, err := sc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle read: %v, want the idle deadline", err)
	}
	sc.Close()
	if l.Open() != 0 {
		t.Fatalf("open %d after close", l.Open())
	}
}
