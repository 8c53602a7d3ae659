package native

import (
	"io"
	"net/http"
	"testing"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// rig is an engine with stub backends behind the native handler (and
// /healthz) on an httptest listener.
type rig struct {
	*sessiontest.Rig[*session.Engine]
}

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	return &rig{sessiontest.NewRig(t, sessiontest.Build[session.Config, *session.Engine]{
		Config: session.Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
			CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate},
		New:   newEngine,
		Mount: mount,
	}, opts...)}
}

// newEngine is session.New on the rig's stub backends.
func newEngine(cfg session.Config, m *stub.Model, s *stub.Synthesizer) (*session.Engine, error) {
	cfg.ModelBackend, cfg.Synthesizer = m, s
	return session.New(cfg)
}

// mount serves GET /v1/session with Handler, and /healthz.
func mount(mux *http.ServeMux, e *session.Engine) {
	mux.Handle("GET /v1/session", Handler(e, Options{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
}

// handler is what the rig serves, for a test's own server in front.
func (r *rig) handler() http.Handler {
	mux := http.NewServeMux()
	mount(mux, r.Engine)
	return mux
}
