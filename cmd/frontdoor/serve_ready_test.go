package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestServeReadyzFollowsTheModel: with -model=openai pointed at a closed
// loopback port, /readyz is 503 and says why (the model's probe, GET
// {url}/models, is refused); once a model server listens on that port,
// /readyz turns 200 by itself, without a restart (-backend-probe-interval).
func TestServeReadyzFollowsTheModel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	modelURL := "http://" + addr + "/v1"
	p := startServe(t, nil, "-model=openai", "-model-url="+modelURL, "-model-name=test",
		"-backend-probe-interval=100ms")

	readyz := func() (int, readyzBody) {
		t.Helper()
		resp, err := http.Get(p.url("/readyz"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r readyzBody
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("/readyz %d: %q is not JSON: %v", resp.StatusCode, b, err)
		}
		return resp.StatusCode, r
	}
	code, r := readyz()
	want := "model: GET " + modelURL + "/models: connect: connection refused"
	if code != http.StatusServiceUnavailable || r.Ready || len(r.Reasons) != 1 || r.Reasons[0] != want {
		t.Fatalf("/readyz with the model down: %d %+v, want 503 with reason %q", code, r, want)
	}

	// The model server comes up on the same port.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	ms := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"test","object":"model"}]}`)
	})}
	go func() { _ = ms.Serve(ln) }()
	defer ms.Close()
	waitFor(t, 10*time.Second, "/readyz 200 once the model server answers", func() bool {
		code, r := readyz()
		return code == http.StatusOK && r.Ready && len(r.Reasons) == 0
	})
	// The log says so too: unready at start, then ready again.
	var msgs []string
	waitFor(t, 5*time.Second, "the log line of the model ready again", func() bool {
		for {
			select {
			case m, ok := <-p.logs:
				if !ok {
					return false
				}
				msg, _ := m["msg"].(string)
				msgs = append(msgs, msg)
				if msg == "backend ready again" && m["backend"] == "model" {
					return true
				}
			default:
				return false
			}
		}
	})
	if !slices.Contains(msgs, "backends not ready at start: /readyz answers 503 until they are") {
		t.Errorf("no start-up warning of the unready model in %q", msgs)
	}
}

// readyzBody is the JSON of /readyz.
type readyzBody struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
}
