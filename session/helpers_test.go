package session

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/view"
)

// rig is an engine with stub backends behind the native protocol and the
// operations endpoints (testHandler) on an httptest listener.
type rig struct {
	*sessiontest.Rig[*Engine]
}

// pipeline is a rig option that changes the engine's turn pipeline
// before its first call (pipeline_test.go).
type pipeline func(*Engine, []step) []step

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	var pipe pipeline
	return &rig{sessiontest.NewRig(t, sessiontest.Build[Config, *Engine]{
		Config: Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
			CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate},
		Option: func(o any) bool {
			p, ok := o.(pipeline)
			if ok {
				pipe = p
			}
			return ok
		},
		New: func(cfg Config, m *stub.Model, s *stub.Synthesizer) (*Engine, error) {
			// A test may put its own backend in place of a stub.
			if cfg.ModelBackend == nil {
				cfg.ModelBackend = m
			}
			if cfg.Synthesizer == nil {
				cfg.Synthesizer = s
			}
			e, err := New(cfg)
			if err == nil && pipe != nil {
				e.steps = pipe(e, e.steps)
			}
			return e, err
		},
		Mount: mount,
	}, opts...)}
}

// mount serves e's calls on /v1/session (package native's handler:
// NativeHandler) and the operations endpoints the tests read, as package
// session/server mounts them (which these tests cannot import).
func mount(mux *http.ServeMux, e *Engine) {
	mux.Handle("GET /v1/session", NativeHandler(e))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := e.Readiness(r.Context())
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{}))
}

// testHandler is mount on a mux of its own, with extra beside, for a
// test's own engine.
func testHandler(e *Engine, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mount(mux, e)
	for p, h := range extra {
		mux.Handle(p, h)
	}
	return mux
}

// released checks that the named stages hold no lease and that their
// ledgers balance.
func (r *rig) released(names ...string) {
	r.T.Helper()
	for _, name := range names {
		s := r.stage(name)
		if err := s.Ledger.Check(s.Leased, s.Queued); err != nil || s.Leased != 0 {
			r.T.Errorf("%s: %v %+v", name, err, s)
		}
	}
}

func (r *rig) stage(name string) view.Stage {
	v, ok := r.Engine.Stages().Stage(name)
	if !ok {
		r.T.Fatalf("no stage %s", name)
	}
	return v
}

// promptTone is d of a 440 Hz tone at rate: prompt audio for tests.
func promptTone(rate int, d time.Duration) backend.Audio {
	s := make([]int16, int(d.Seconds()*float64(rate)))
	for i := range s {
		s[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return backend.Audio{Rate: rate, Samples: s}
}
