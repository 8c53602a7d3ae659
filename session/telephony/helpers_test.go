package telephony

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/native"
	"github.com/frontdoorhq/frontdoor/session/view"
)

// rig is an engine with stub backends behind every phone route (and the
// native protocol, for the native side of a comparison) on an httptest
// listener.
type rig struct {
	*sessiontest.Rig[*session.Engine]
	// backend is the engine's model: r.Model until a test wraps it
	// (modelBackend, setModelBackend).
	backend *swapModel
	audio   *GatewayHandler // AudioSocket connections
}

// rigTwilio configures the rig's /v1/twilio.
type rigTwilio func(*Config)

// rigGateway configures the rig's gateway endpoints (/v1/plivo, ...).
type rigGateway func(*GatewayConfig)

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	r := &rig{backend: &swapModel{}}
	var tc Config
	var gc GatewayConfig
	r.Rig = sessiontest.NewRig(t, sessiontest.Build[session.Config, *session.Engine]{
		Config: session.Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
			CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate},
		Option: func(o any) bool {
			switch o := o.(type) {
			case rigTwilio:
				o(&tc)
			case rigGateway:
				o(&gc)
			default:
				return false
			}
			return true
		},
		New: func(cfg session.Config, m *stub.Model, s *stub.Synthesizer) (*session.Engine, error) {
			r.backend.m.Store(&modelRef{m})
			cfg.ModelBackend, cfg.Synthesizer = r.backend, s
			if tc.Logger == nil {
				tc.Logger = cfg.Logger // the transport logs where the engine does
			}
			if gc.Logger == nil {
				gc.Logger = cfg.Logger
			}
			return session.New(cfg)
		},
		Mount: func(mux *http.ServeMux, e *session.Engine) {
			r.audio = NewAudioSocketHandler(e, gc)
			mount(t, mux, e, tc, gc)
		},
	}, opts...)
	return r
}

// mount serves e's calls on /v1/twilio (and /v1/twilio/{token}) with tc,
// on the gateway dialects' routes with gc, and on /v1/session (package
// native, for the native side of a comparison), as package session/server
// mounts them (which imports this package).
func mount(t testing.TB, mux *http.ServeMux, e *session.Engine, tc Config, gc GatewayConfig) {
	for _, d := range GatewayDialects {
		h, err := NewGatewayHandler(e, d, gc)
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("GET /v1/"+d, h)
	}
	mux.Handle("GET /v1/session", native.Handler(e, native.Options{}))
	h := NewHandler(e, tc)
	mux.Handle("GET /v1/twilio", h)
	mux.Handle("GET /v1/twilio/{token}", h)
}

// testHandler is mount on a mux of its own, with extra beside, for a
// test's own engine.
func testHandler(t testing.TB, e *session.Engine, tc Config, gc GatewayConfig, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mount(t, mux, e, tc, gc)
	for p, h := range extra {
		mux.Handle(p, h)
	}
	return mux
}

func (r *rig) stage(name string) view.Stage {
	v, ok := r.Engine.Stages().Stage(name)
	if !ok {
		r.T.Fatalf("no stage %s", name)
	}
	return v
}

// historyModel wraps a model and keeps the history each turn was given.
type historyModel struct {
	backend.Model
	mu    sync.Mutex
	turns []backend.Turn
}

func (h *historyModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	h.mu.Lock()
	h.turns = append(h.turns, t)
	h.mu.Unlock()
	return h.Model.Reply(ctx, t, emit)
}

func (h *historyModel) seen() []backend.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]backend.Turn(nil), h.turns...)
}

// logRecords captures log records whose message starts with a prefix.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

func (l *logRecords) find(prefix string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if strings.HasPrefix(r["msg"].(string), prefix) {
			out = append(out, r)
		}
	}
	return out
}

// swapModel is a backend.Model whose model a test may replace once the
// engine runs (with a wrapper of the one before).
type swapModel struct{ m atomic.Pointer[modelRef] }

type modelRef struct{ backend.Model }

func (s *swapModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	return s.m.Load().Reply(ctx, t, emit)
}

// modelBackend is the model the engine's turns go to.
func (r *rig) modelBackend() backend.Model { return r.backend.m.Load().Model }

// setModelBackend makes m the model the engine's turns go to.
func (r *rig) setModelBackend(m backend.Model) { r.backend.m.Store(&modelRef{m}) }

// callsEnded is frontdoor_calls_total{end} of the rig's engine.
func callsEnded(t testing.TB, r *rig, end string) float64 {
	t.Helper()
	mfs, err := r.Engine.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "end" && l.GetValue() == end {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// waitAdmitted waits until the transports have logged n calls told they
// were admitted ("twilio: session", "asterisk: session", ... with the
// disposition admitted). A test phone sends its speech at once, not in
// real time: sent before its call was admitted, all of it would be what
// a waiting caller says, which is no turn (TestOwnerNoTurnBeforeAdmission).
func (l *logRecords) waitAdmitted(t testing.TB, n int) {
	t.Helper()
	sessiontest.WaitFor(t, fmt.Sprintf("%d calls admitted", n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		admitted := 0
		for _, r := range l.recs {
			if strings.HasSuffix(r["msg"].(string), ": session") && fmt.Sprint(r["disposition"]) == "admitted" {
				admitted++
			}
		}
		return admitted >= n
	})
}

// dumpOnFailure logs every record captured when t has failed.
func (l *logRecords) dumpOnFailure(t testing.TB) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range l.recs {
			t.Log(r)
		}
	})
}
