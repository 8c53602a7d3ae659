package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
)

// TestRoutes: the server mounts the operations endpoints and the native
// transport on one mux, a handler in Config.Handlers takes a media
// route's place, and /readyz turns 503 with its reason once the engine
// drains.
func TestRoutes(t *testing.T) {
	model, synth := stub.NewModel(stub.Settings{}), stub.NewSynthesizer(stub.Settings{})
	defer model.Close()
	defer synth.Close()
	srv, err := New(Config{
		Config: session.Config{ModelBackend: model, Synthesizer: synth},
		Handlers: map[string]http.Handler{
			"GET /v1/webrtc": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "double") }),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "frontdoor_stage_slots") {
		t.Fatalf("/metrics %d without the stage gauges", code)
	}
	code, body := get("/v1/stages")
	var v struct {
		Stages []struct {
			Name string `json:"name"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
		t.Fatalf("/v1/stages %d %v: %q", code, err, body)
	}
	var names []string
	for _, st := range v.Stages {
		names = append(names, st.Name)
	}
	if want := []string{session.StageSession, session.StageRecognize, session.StageModel, session.StageSynthesis}; !slices.Equal(names, want) {
		t.Fatalf("/v1/stages names %v, want %v", names, want)
	}
	if code, body := get("/v1/webrtc"); code != 200 || body != "double" {
		t.Fatalf("/v1/webrtc %d %q, want the handler of Config.Handlers", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/session", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"admitted"`) {
		t.Fatalf("/v1/session: %s %v", b, err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")

	if err := srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	code, body = get("/readyz")
	var rd session.Readiness
	if err := json.Unmarshal([]byte(body), &rd); err != nil || code != http.StatusServiceUnavailable || rd.Ready || len(rd.Reasons) != 1 || rd.Reasons[0] != "draining" {
		t.Fatalf("/readyz while draining: %d %q", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}
