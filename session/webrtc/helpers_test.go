package webrtc

import (
	"net/http"
	"testing"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// rig is an engine with stub backends behind Handler (loopback candidates
// only) on an httptest listener.
type rig struct {
	*sessiontest.Rig[*session.Engine]
}

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	return &rig{sessiontest.NewRig(t, sessiontest.Build[session.Config, *session.Engine]{
		Config: session.Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
			CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate},
		New: func(cfg session.Config, m *stub.Model, s *stub.Synthesizer) (*session.Engine, error) {
			cfg.ModelBackend, cfg.Synthesizer = m, s
			return session.New(cfg)
		},
		Mount: func(mux *http.ServeMux, e *session.Engine) {
			mux.Handle("GET /v1/webrtc", Handler(e, Config{LoopbackOnly: true}))
		},
	}, opts...)}
}
