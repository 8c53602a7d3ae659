package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// fake is an OpenAI-compatible server on loopback whose handler the test
// sets; it records when each request's context ended (the client went away).
type fake struct {
	*httptest.Server
	t       *testing.T
	handler http.HandlerFunc
	done    chan struct{} // closed at test end: releases blocked handlers
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	gone    chan time.Time // one value per request whose client disconnected
	arrived atomic.Int32
	held    atomic.Int32 // requests in hold
	holds   atomic.Int32 // requests ever held
}

func newFake(t *testing.T, h http.HandlerFunc) *fake {
	f := &fake{t: t, handler: h, done: make(chan struct{}), gone: make(chan time.Time, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.arrived.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The client hung up while sending: net/http starts watching
			// for a disconnect only after the body was read to its end.
			f.gone <- time.Now()
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		stop := context.AfterFunc(r.Context(), func() { f.gone <- time.Now() })
		f.handler(w, r)
		// A handler that returned on the disconnect may get here before the
		// context runs its AfterFunc: then stop prevents it, and the
		// disconnect is reported here instead.
		if stop() && r.Context().Err() != nil {
			f.gone <- time.Now()
		}
	}))
	t.Cleanup(func() {
		close(f.done)
		f.Close()
	})
	return f
}

// hold blocks the handler until the client goes away or the test ends.
func (f *fake) hold(r *http.Request) {
	f.holds.Add(1)
	f.held.Add(1)
	defer f.held.Add(-1)
	select {
	case <-r.Context().Done():
	case <-f.done:
	}
}

func (f *fake) lastBody() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(f.bodies[len(f.bodies)-1], &m); err != nil {
		f.t.Fatalf("request body: %v", err)
	}
	return m
}

// requests returns the number of requests that reached the server.
func (f *fake) requests() int { return int(f.arrived.Load()) }

func (f *fake) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[len(f.headers)-1]
}

// waitGone waits for the server to see the client disconnect.
func (f *fake) waitGone() time.Time {
	f.t.Helper()
	select {
	case at := <-f.gone:
		return at
	case <-time.After(5 * time.Second):
		f.t.Fatal("server never saw the client disconnect")
		return time.Time{}
	}
}

// stallOn makes the client's stall watchdog, on clk, fire: once the server
// holds a request and ready says the client is where the stall is wanted,
// it advances clk by stall whenever the watchdog is armed, until the
// returned stop is called (after the call returned).
func (f *fake) stallOn(clk *stagestest.Clock, stall time.Duration, ready func() bool) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
			if f.held.Load() > 0 && ready() && clk.Pending() == 1 {
				clk.Advance(stall)
			}
		}
	}()
	return func() { close(quit); <-done }
}

func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sseData(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func chunk(content, finish string) string {
	fr := "null"
	if finish != "" {
		fr = fmt.Sprintf("%q", finish)
	}
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":%s}]}`, c, fr)
}

// tracker counts response bodies opened and closed by the client, so a test
// can check that a call returned only after closing its body.
type tracker struct {
	rt             http.RoundTripper
	opened, closed atomic.Int32
}

func (tr *tracker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := tr.rt.RoundTrip(r)
	if err == nil {
		tr.opened.Add(1)
		resp.Body = &trackedBody{ReadCloser: resp.Body, tr: tr}
	}
	return resp, err
}

type trackedBody struct {
	io.ReadCloser
	tr   *tracker
	once sync.Once
}

func (b *trackedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.tr.closed.Add(1) })
	return err
}

func (tr *tracker) allClosed(t *testing.T) {
	t.Helper()
	if o, c := tr.opened.Load(), tr.closed.Load(); o != c {
		t.Fatalf("%d response bodies opened, %d closed at return", o, c)
	}
}

func newClient(t *testing.T) (*http.Client, *tracker) {
	tr := &tracker{rt: &http.Transport{}}
	c := &http.Client{Transport: tr}
	t.Cleanup(func() { tr.rt.(*http.Transport).CloseIdleConnections() })
	return c, tr
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
