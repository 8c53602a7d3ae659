package callbackapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/callbackapi"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestCallbackHTTP: the operators list (numbers redacted), claim (the full
// number), and finish with the claim's attempt, over real HTTP.
func TestCallbackHTTP(t *testing.T) {
	cfg := fallback.DefaultConfig()
	cfg.DataDir, cfg.Clock = t.TempDir(), stagestest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, err := fallback.New(t.Context(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(callbackapi.Handler(s))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	post := func(path, body string) *http.Response {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := post("/v1/callbacks/claim", `{"operator":"op1"}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("empty claim: %s", resp.Status)
	}
	a, _ := s.RequestCallback(t.Context(), fallback.CallbackRequest{Call: "c1", Turn: "t1", Number: "+15550123", Consent: true})

	resp, err := srv.Client().Get(srv.URL + "/v1/callbacks?status=pending")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Callbacks []fallback.Callback }
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Callbacks) != 1 || list.Callbacks[0].Number != "+155****23" {
		t.Fatalf("list %+v", list)
	}

	resp = post("/v1/callbacks/claim", `{"operator":"op1"}`)
	var claim struct{ Callback fallback.Callback }
	json.NewDecoder(resp.Body).Decode(&claim)
	if resp.StatusCode != http.StatusOK || claim.Callback.Ref != a.Ref || claim.Callback.Number != "+15550123" {
		t.Fatalf("claim %s %+v", resp.Status, claim)
	}
	if resp := post("/v1/callbacks/"+a.Ref+"/complete", `{"attempt":2}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("wrong attempt: %s", resp.Status)
	}
	if resp := post("/v1/callbacks/nope/fail", `{"attempt":1}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown ticket: %s", resp.Status)
	}
	if resp := post("/v1/callbacks/"+a.Ref+"/fail", `{"attempt":1,"reason":"no answer"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("fail: %s", resp.Status)
	}
	if c, _ := s.Store().Get(t.Context(), a.Ref); c.Status != fallback.StatusFailed || c.Note != "no answer" {
		t.Fatalf("stored %+v", c)
	}
	if resp := post("/v1/callbacks/claim", `not json`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad json: %s", resp.Status)
	}
}
