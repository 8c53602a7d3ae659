package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRefusedMetric: every refusal before the handler is counted in
// frontdoor_guard_refused_total under its reason, on the registry given.
func TestRefusedMetric(t *testing.T) {
	keys, err := ReadAPIKeys(strings.NewReader("acme caller acme-key-0123456789\nops operator ops-key-01234567890\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	busy := false
	hold, release := make(chan struct{}), make(chan struct{})
	g := New(Config{Auth: keys, TenantSessions: 1, Busy: func() bool { return busy }, Registry: reg})
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			close(hold)
			<-release
		}
	}), Public)
	do := func(tok string, hdr ...string) int {
		r := httptest.NewRequest("GET", "/v1/session", nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const acme, ops = "acme-key-0123456789", "ops-key-01234567890"
	for _, tc := range []struct {
		tok  string
		hdr  []string
		want int
	}{
		{"", nil, 401}, {"not-a-key-at-all", nil, 401}, {ops, nil, 403},
		{acme, []string{"Upgrade", "websocket", "Sec-WebSocket-Protocol", "chat"}, 400},
		{acme, nil, 200},
	} {
		if got := do(tc.tok, tc.hdr...); got != tc.want {
			t.Fatalf("%q %v: %d, want %d", tc.tok, tc.hdr, got, tc.want)
		}
	}
	busy = true
	if got := do(acme); got != 503 {
		t.Fatalf("busy: %d", got)
	}
	busy = false
	done := make(chan struct{})
	go func() { defer close(done); do(acme, "X-Hold", "1") }()
	<-hold
	if got := do(acme); got != 429 {
		t.Fatalf("over the tenant cap: %d", got)
	}
	close(release)
	<-done

	for reason, want := range map[string]float64{"unauthorized": 2, "forbidden": 1, "subprotocol": 1, "overloaded": 1, "rate_limited": 1} {
		if got := testutil.ToFloat64(g.refused.WithLabelValues(reason)); got != want {
			t.Errorf("refused{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "frontdoor_guard_refused_total"); err != nil || n != 5 {
		t.Errorf("registry has %d refused series (%v), want 5", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP frontdoor_guard_refused_total Requests the guard refused before the handler, by reason (unauthorized, forbidden, rate_limited, overloaded, subprotocol).
# TYPE frontdoor_guard_refused_total counter
frontdoor_guard_refused_total{reason="forbidden"} 1
frontdoor_guard_refused_total{reason="overloaded"} 1
frontdoor_guard_refused_total{reason="rate_limited"} 1
frontdoor_guard_refused_total{reason="subprotocol"} 1
frontdoor_guard_refused_total{reason="unauthorized"} 2
`), "frontdoor_guard_refused_total"); err != nil {
		t.Error(err)
	}
}
