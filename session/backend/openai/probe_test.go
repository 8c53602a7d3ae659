package openai

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

var _ backend.Prober = (*Model)(nil)

// TestProbe: GET {base}/models answered below 500 is up (a 404 from an
// agent that lists no models too); a 5xx and a refused connection are
// not, with a reason that names the request.
func TestProbe(t *testing.T) {
	status := http.StatusOK
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			t.Errorf("probe %s %s", r.Method, r.URL.Path)
		}
		auth = r.Header.Get("Authorization")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	t.Setenv("PROBE_TEST_KEY", "sk-probe")
	m, _ := newModel(t, srv.URL, func(c *ModelConfig) { c.APIKeyEnv = "PROBE_TEST_KEY" })
	ctx := context.Background()
	for _, st := range []int{http.StatusOK, http.StatusNotFound, http.StatusUnauthorized} {
		status = st
		if err := m.Probe(ctx); err != nil {
			t.Errorf("status %d: %v, want up", st, err)
		}
	}
	if auth != "Bearer sk-probe" {
		t.Errorf("probe sent Authorization %q", auth)
	}
	status = http.StatusServiceUnavailable
	if err := m.Probe(ctx); err == nil || err.Error() != "GET "+srv.URL+"/v1/models: 503 Service Unavailable" {
		t.Errorf("503: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	m, _ = newModel(t, dead, nil)
	if err := m.Probe(ctx); err == nil || err.Error() != "GET "+dead+"/v1/models: connect: connection refused" {
		t.Errorf("refused: %v", err)
	}
	if err := m.Probe(ctx); err != nil && strings.Contains(err.Error(), "sk-probe") {
		t.Errorf("key in %v", err)
	}
}
