package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var _ backend.Model = (*Model)(nil)

func newModel(t *testing.T, url string, mut func(*ModelConfig)) (*Model, *tracker) {
	t.Helper()
	hc, tr := newClient(t)
	cfg := ModelConfig{
		Endpoint:     Endpoint{BaseURL: url + "/v1", StallTimeout: 2 * time.Second, HTTPClient: hc},
		Model:        "llama3.2",
		SystemPrompt: "You answer the phone.",
	}
	if mut != nil {
		mut(&cfg)
	}
	m, err := NewModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, tr
}

func collect(deltas *[]string) func(string) error {
	return func(d string) error {
		*deltas = append(*deltas, d)
		return nil
	}
}

func TestReplyStreams(t *testing.T) {
	t.Setenv("FD_TEST_KEY", "sk-test-secret")
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		sseStart(w)
		sseData(w, chunk("Hello", ""))
		w.Write([]byte(": keep-alive comment\n\n"))
		sseData(w, chunk(", caller", ""))
		sseData(w, chunk("", "stop"))
		sseData(w, "[DONE]")
	})
	m, tr := newModel(t, f.URL, func(c *ModelConfig) { c.APIKeyEnv = "FD_TEST_KEY"; c.MaxTokens = 64 })
	var got []string
	turn := backend.Turn{Call: "c1", ID: "t2", Text: "what time is it", History: []backend.Message{
		{Role: backend.RoleUser, Content: "hi"}, {Role: backend.RoleAssistant, Content: "Hello, how can"},
	}}
	if err := m.Reply(context.Background(), turn, collect(&got)); err != nil {
		t.Fatal(err)
	}
	tr.allClosed(t)
	if strings.Join(got, "|") != "Hello|, caller" {
		t.Fatalf("deltas %q", got)
	}
	body := f.lastBody()
	if body["model"] != "llama3.2" || body["stream"] != true || body["max_tokens"] != float64(64) {
		t.Fatalf("request %v", body)
	}
	var roles, contents []string
	for _, m := range body["messages"].([]any) {
		mm := m.(map[string]any)
		roles = append(roles, mm["role"].(string))
		contents = append(contents, mm["content"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" ||
		strings.Join(contents, "|") != "You answer the phone.|hi|Hello, how can|what time is it" {
		t.Fatalf("messages %v %v", roles, contents)
	}
	if h := f.lastHeader().Get("Authorization"); h != "Bearer sk-test-secret" {
		t.Fatalf("authorization %q", h)
	}
}

func TestReplyFailures(t *testing.T) {
	t.Setenv("FD_TEST_KEY", "sk-test-secret")
	for _, tc := range []struct {
		name    string
		handler func(f *fake) http.HandlerFunc
		want    error
		status  int
		retry   time.Duration
	}{
		{"429 with retry-after", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(429)
				w.Write([]byte(`{"error":{"message":"rate limited","type":"requests"}}`))
			}
		}, backend.ErrOverloaded, 429, 3 * time.Second},
		{"503 ollama busy", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(503)
				w.Write([]byte(`{"error":"server busy, please try again.  maximum pending requests exceeded"}`))
			}
		}, backend.ErrOverloaded, 503, 0},
		{"503 html from a proxy", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(503)
				w.Write([]byte(strings.Repeat("<html>busy</html>", 10000)))
			}
		}, backend.ErrOverloaded, 503, 0},
		{"500", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }
		}, backend.ErrUnavailable, 500, 0},
		{"401 echoing the key", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
				w.Write([]byte(`{"error":{"message":"bad key ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}}`))
			}
		}, backend.ErrRejected, 401, 0},
		{"malformed chunk", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, chunk("Hi", ""))
				sseData(w, `{"choices":[{"index":0,"delta":{"content":"x"`)
			}
		}, backend.ErrMalformed, 0, 0},
		{"error event mid-stream", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, `{"error":{"message":"model crashed"}}`)
			}
		}, backend.ErrUnavailable, 0, 0},
		{"content, then EOF without finish_reason", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, chunk("Hi", ""))
			}
		}, nil, 0, 0},
		{"content, then [DONE] without finish_reason", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, chunk("Hi", ""))
				sseData(w, "[DONE]")
			}
		}, nil, 0, 0},
		{"no content, [DONE] without finish_reason", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, "[DONE]")
			}
		}, backend.ErrMalformed, 0, 0},
		{"no content, EOF without finish_reason", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
			}
		}, backend.ErrMalformed, 0, 0},
		{"not a stream", func(*fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
			}
		}, backend.ErrMalformed, 0, 0},
		{"finished but never closed", func(f *fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, chunk("Hi", "stop"))
				f.hold(r)
			}
		}, nil, 0, 0},
		{"stall before headers", func(f *fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { f.hold(r) }
		}, backend.ErrStalled, 0, 0},
		{"stall mid-stream", func(f *fake) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				sseData(w, chunk("Hi", ""))
				f.hold(r)
			}
		}, backend.ErrStalled, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fake
			f = newFake(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(f)(w, r) })
			// The watchdog runs on a manual clock: it fires only when
			// the test has the server hold the request (after the
			// reply's end, in the case that finished).
			const stall = time.Second
			clk := stagestest.NewClock(time.Unix(0, 0))
			m, tr := newModel(t, f.URL, func(c *ModelConfig) {
				c.APIKeyEnv = "FD_TEST_KEY"
				c.StallTimeout, c.Clock = stall, clk
			})
			var got []string
			var emits atomic.Int32
			stop := f.stallOn(clk, stall, func() bool { return tc.want != nil || emits.Load() > 0 })
			err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(d string) error {
				got = append(got, d)
				emits.Add(1)
				return nil
			})
			stop()
			tr.allClosed(t)
			if tc.want == nil {
				if err != nil || strings.Join(got, "") != "Hi" {
					t.Fatalf("err %v, reply %q", err, got)
				}
				if f.holds.Load() > 0 { // the reply was complete before its stream ended: it was closed
					f.waitGone()
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-test-secret") {
				t.Fatalf("key in error: %v", err)
			}
			var be *backend.Error
			if !errors.As(err, &be) || be.Status != tc.status || be.RetryAfter != tc.retry || be.Backend != Name {
				t.Fatalf("error %#v", be)
			}
			if tc.want == backend.ErrStalled {
				f.waitGone()
			}
		})
	}
}

func TestReplyConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	m, _ := newModel(t, url, nil)
	err = m.Reply(context.Background(), backend.Turn{Text: "hi"}, collect(new([]string)))
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("err %v", err)
	}
}

// TestReplyBargeIn cancels in the middle of a stream, as a barge-in does: the
// client must hang up on the server, and Reply must return only after the
// response body is closed.
func TestReplyBargeIn(t *testing.T) {
	for _, how := range []string{"cancel", "emit error"} {
		t.Run(how, func(t *testing.T) {
			var f *fake
			f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
				sseStart(w)
				for i := 0; ; i++ {
					select {
					case <-r.Context().Done():
						return
					case <-f.done:
						return
					case <-time.After(2 * time.Millisecond):
						sseData(w, chunk("word ", ""))
					}
				}
			})
			m, tr := newModel(t, f.URL, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stale := errors.New("stale generation")
			n := 0
			err := m.Reply(ctx, backend.Turn{Text: "tell me a story"}, func(string) error {
				n++
				if n == 3 {
					if how == "cancel" {
						cancel()
						return nil
					}
					return stale
				}
				return nil
			})
			returned := time.Now()
			tr.allClosed(t)
			switch how {
			case "cancel":
				if !errors.Is(err, context.Canceled) || n != 3 {
					t.Fatalf("err %v after %d deltas", err, n)
				}
			default:
				if !errors.Is(err, stale) || backend.KindOf(err) != backend.KindEmit {
					t.Fatalf("err %v", err)
				}
			}
			gone := f.waitGone()
			t.Logf("server saw the disconnect %v after Reply returned", gone.Sub(returned))
		})
	}
}

func TestNewModelConfig(t *testing.T) {
	t.Setenv("FD_EMPTY_KEY", "")
	for _, cfg := range []ModelConfig{
		{Model: "m"},
		{Endpoint: Endpoint{BaseURL: "ftp://x"}, Model: "m"},
		{Endpoint: Endpoint{BaseURL: "http://127.0.0.1:1/v1"}},
		{Endpoint: Endpoint{BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "FD_EMPTY_KEY"}, Model: "m"},
	} {
		if _, err := NewModel(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestNoAmbientCredentials: with no -model-api-key-env, OPENAI_* variables
// meant for another server are not sent along.
func TestNoAmbientCredentials(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_PROJECT_ID", "proj-ambient")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sseStart(w)
		sseData(w, chunk("ok", "stop"))
	})
	m, _ := newModel(t, f.URL, nil)
	if err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, collect(new([]string))); err != nil {
		t.Fatal(err)
	}
	h := f.lastHeader()
	for _, k := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project"} {
		if v := h.Get(k); v != "" {
			t.Errorf("%s: %q sent", k, v)
		}
	}
}

// TestStallOnClock drives the stall watchdog on a manual clock: time spent
// in emit (the caller's) is no stall, however long; a server silent for
// the stall timeout after that is, and not a nanosecond earlier.
func TestStallOnClock(t *testing.T) {
	const stall = time.Second
	clk := stagestest.NewClock(time.Unix(0, 0))
	var f *fake
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sseStart(w)
		sseData(w, chunk("Hi", ""))
		f.hold(r)
	})
	m, tr := newModel(t, f.URL, func(c *ModelConfig) { c.StallTimeout, c.Clock = stall, clk })
	done := make(chan error, 1)
	emitted := make(chan struct{})
	go func() {
		done <- m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(string) error {
			clk.Advance(time.Hour) // a slow caller: the watchdog is paused
			close(emitted)
			return nil
		})
	}()
	<-emitted
	for deadline := time.Now().Add(5 * time.Second); clk.Pending() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("watchdog not re-armed after emit")
		}
	}
	clk.Advance(stall - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("returned %v before the stall timeout", err)
	default:
	}
	clk.Advance(time.Nanosecond)
	if err := <-done; !errors.Is(err, backend.ErrStalled) {
		t.Fatalf("err %v, want stalled", err)
	}
	tr.allClosed(t)
	f.waitGone()
}
