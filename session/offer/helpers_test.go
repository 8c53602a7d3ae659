package offer

import (
	"net/http"
	"testing"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/native"
)

// rig is an engine with stub backends behind the native protocol
// (package native) on an httptest listener.
type rig struct {
	*sessiontest.Rig[*session.Engine]
}

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	return &rig{sessiontest.NewRig(t, sessiontest.Build[session.Config, *session.Engine]{
		Config: session.Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
			CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate},
		New: newEngine,
		Mount: func(mux *http.ServeMux, e *session.Engine) {
			mux.Handle("GET /v1/session", native.Handler(e, native.Options{}))
		},
	}, opts...)}
}

// newEngine is session.New on the rig's stub backends.
func newEngine(cfg session.Config, m *stub.Model, s *stub.Synthesizer) (*session.Engine, error) {
	cfg.ModelBackend, cfg.Synthesizer = m, s
	return session.New(cfg)
}
