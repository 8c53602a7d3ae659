package web_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/web"
)

func TestAssets(t *testing.T) {
	p := web.Handler(web.Options{})
	defer p.Close()
	srv := httptest.NewServer(p)
	defer srv.Close()

	tests := []struct {
		path, wantType string
		wantStatus     int
	}{
		{"/", "text/html", 200},
		{"/assets/style.css", "text/css", 200},
		{"/assets/app.js", "text/javascript", 200},
		{"/assets/call.js", "text/javascript", 200},
		{"/assets/rtc.js", "text/javascript", 200},
		{"/assets/stages.js", "text/javascript", 200},
		{"/assets/missing.js", "", 404},
		{"/assets/", "", 404},
		{"/elsewhere", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := srv.Client().Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus != 200 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) {
				t.Errorf("Content-Type %q, want %s", ct, tt.wantType)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q does not keep the page to its origin", csp)
			}
		})
	}
}

// TestAssetsNameNoOtherHost: nothing in the page refers to another host (the
// SVG namespace is a name, not a fetch).
func TestAssetsNameNoOtherHost(t *testing.T) {
	url := regexp.MustCompile(`(?i)(https?:|wss?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(web.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Assets(), path)
		if err != nil {
			return err
		}
		for _, m := range url.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// blockingBurster runs until its context ends.
type blockingBurster struct{ started chan web.Burst }

func (b *blockingBurster) Burst(ctx context.Context, req web.Burst, progress func(any)) (any, error) {
	progress(map[string]int{"offered": 1})
	b.started <- req
	<-ctx.Done()
	return map[string]int{"session admitted": 1}, ctx.Err()
}

func TestBurstAPI(t *testing.T) {
	bb := &blockingBurster{started: make(chan web.Burst, 1)}
	p := web.Handler(web.Options{Burster: bb, MaxCallers: 100})
	defer p.Close()
	srv := httptest.NewServer(p)
	defer srv.Close()

	do := func(method, body string) (int, web.BurstStatus, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/v1/burst", strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var st web.BurstStatus
		_ = json.Unmarshal(b, &st)
		return resp.StatusCode, st, string(b)
	}

	bad := []struct{ name, body string }{
		{"not JSON", `{`},
		{"unknown field", `{"callers": 1, "rate": 1, "who": "x"}`},
		{"no callers", `{"callers": 0, "rate": 1}`},
		{"too many callers", `{"callers": 101, "rate": 1}`},
		{"no rate", `{"callers": 1}`},
		{"rate too high", `{"callers": 1, "rate": 1000}`},
		{"too many turns", `{"callers": 1, "rate": 1, "turns": 21}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, body := do("POST", tt.body); code != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", code, body)
			}
		})
	}

	code, st, body := do("POST", `{"callers": 5, "rate": 10}`)
	if code != http.StatusAccepted || !st.Running || st.ID != 1 || st.Burst.Turns != 1 {
		t.Fatalf("start: %d %s", code, body)
	}
	if got := <-bb.started; got != (web.Burst{Callers: 5, Rate: 10, Turns: 1}) {
		t.Errorf("burster got %+v", got)
	}
	if code, _, body := do("POST", `{"callers": 5, "rate": 10}`); code != http.StatusConflict {
		t.Errorf("second burst while running: %d %s, want 409", code, body)
	}
	if code, st, body := do("DELETE", ""); code != 200 || !st.Stopped {
		t.Errorf("stop: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, st, body = do("GET", "")
		if !st.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("burst still running after stop: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Ended == nil || st.Report == nil || st.Error == "" || st.Progress == nil {
		t.Errorf("ended burst: %s; want end time, progress, report and the context error", body)
	}
}

func TestBurstWithoutBurster(t *testing.T) {
	p := web.Handler(web.Options{})
	defer p.Close()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/burst", strings.NewReader(`{"callers": 1, "rate": 1}`)))
	if rec.Code != http.StatusNotImplemented {
		t.Errorf("status %d, want 501: %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/burst", nil))
	var st web.BurstStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Enabled {
		t.Errorf("GET /v1/burst = %s, want enabled false", rec.Body)
	}
}

// Close stops a running burst and waits for its goroutine.
func TestCloseStopsBurst(t *testing.T) {
	bb := &blockingBurster{started: make(chan web.Burst, 1)}
	p := web.Handler(web.Options{Burster: bb})
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/burst", strings.NewReader(`{"callers": 1, "rate": 1}`)))
	if rec.Code != http.StatusAccepted {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	<-bb.started
	p.Close() // returns only once Burst has returned; goleak checks the rest
	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/burst", strings.NewReader(`{"callers": 1, "rate": 1}`)))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("start after Close: %d, want 503", rec.Code)
	}
}
