package guard

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestCallTokens(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	ct := &CallTokens{Secret: []byte(strings.Repeat("k", 32)), Clock: clock, MaxUsed: 2}
	tok, err := ct.Mint("acme", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ten, err := ct.Redeem(tok); err != nil || ten != "acme" {
		t.Fatalf("first redeem: %q %v", ten, err)
	}
	if _, err := ct.Redeem(tok); !errors.Is(err, ErrCallTokenReplayed) {
		t.Fatalf("replay: %v", err)
	}
	other := &CallTokens{Secret: []byte(strings.Repeat("x", 32)), Clock: clock}
	forged, _ := other.Mint("acme", time.Minute)
	payload, _, _ := strings.Cut(tok, ".")
	_, sig, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{"forged": forged, "spliced": payload + "." + sig, "empty": "", "no sig": payload} {
		if _, err := ct.Redeem(bad); !errors.Is(err, ErrCallToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A token lives exactly its ttl on the clock: good a second before,
	// expired at it.
	late, _ := ct.Mint("acme", time.Minute)
	last, _ := ct.Mint("acme", time.Minute)
	clock.Advance(time.Minute - time.Second)
	if _, err := ct.Redeem(last); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := ct.Redeem(late); !errors.Is(err, ErrCallTokenExpired) {
		t.Fatalf("expired: %v", err)
	}
	// The used set is bounded: expired entries make room; live ones refuse.
	a, _ := ct.Mint("acme", time.Minute)
	b, _ := ct.Mint("acme", time.Minute)
	c, _ := ct.Mint("acme", time.Minute)
	if _, err := ct.Redeem(a); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Redeem(b); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Redeem(c); !errors.Is(err, ErrCallTokenBusy) {
		t.Fatalf("over MaxUsed: %v", err)
	}
	if _, err := ct.Mint("bad tenant", time.Minute); err == nil {
		t.Fatal("bad tenant minted")
	}
	if _, err := ct.Mint("acme", 2*time.Hour); err == nil {
		t.Fatal("ttl over the maximum minted")
	}
}

// TestCallTokenSpentByUpgrade: a call token is spent only by the upgrade
// the guard lets through. A refused attempt (429 tenant full, 503
// overloaded) or a request without the upgrade (which the handler answers
// 426) leaves it usable; the upgrade it admits spends it, and a second is
// refused call_token_replayed.
func TestCallTokenSpentByUpgrade(t *testing.T) {
	clock := stagestest.NewClock(stagestest.Epoch)
	ct := &CallTokens{Secret: []byte(strings.Repeat("k", 32)), Clock: clock}
	busy := false
	g := New(Config{CallTokens: ct, TenantSessions: 1, Busy: func() bool { return busy }, Clock: clock})
	hold, held := make(chan struct{}), make(chan struct{})
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			close(held)
			<-hold
		}
		w.WriteHeader(299)
	}), Public)
	do := func(tok string, upgrade bool, query string) (int, string) {
		r := httptest.NewRequest("GET", "/v1/twilio/"+tok+query, nil)
		if upgrade {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body struct{ Code string }
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		return w.Code, body.Code
	}
	mint := func() string {
		tok, err := ct.Mint("acme", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	// acme's one place taken by a call that goes on.
	done := make(chan struct{})
	go func() { defer close(done); do(mint(), true, "?hold") }()
	<-held
	for _, tc := range []struct {
		name     string
		setup    func() // before the refused attempt
		upgrade  bool
		want     int
		wantCode string
		after    func() // before the retry
	}{
		{name: "tenant full", upgrade: true, want: 429, wantCode: "rate_limited",
			after: func() { close(hold); <-done }},
		{name: "overloaded", setup: func() { busy = true }, upgrade: true, want: 503, wantCode: "overloaded",
			after: func() { busy = false }},
		{name: "no upgrade", upgrade: false, want: 299},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := mint()
			if tc.setup != nil {
				tc.setup()
			}
			if st, code := do(tok, tc.upgrade, ""); st != tc.want || code != tc.wantCode {
				t.Fatalf("attempt: %d %q, want %d %q", st, code, tc.want, tc.wantCode)
			}
			if tc.after != nil {
				tc.after()
			}
			if st, code := do(tok, true, ""); st != 299 {
				t.Fatalf("the upgrade after it: %d %q, want the token unspent", st, code)
			}
			if st, code := do(tok, true, ""); st != 403 || code != "call_token_replayed" {
				t.Fatalf("a second upgrade: %d %q, want 403 call_token_replayed", st, code)
			}
		})
	}
}
