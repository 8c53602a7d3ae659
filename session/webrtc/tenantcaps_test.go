package webrtc

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestTenantCapsWebRTC: a WebRTC call's tenant (given in its context, as
// the guard gives it) counts against the engine's caps, with no guard in
// front: the tenant's third call is ended rate_limited before the session
// stage, another tenant's is admitted, and the second turn of a call ends
// it rate_limited (one turn a minute, burst 1, on a clock that does not
// move).
func TestTenantCapsWebRTC(t *testing.T) {
	t.Parallel()
	lim := tenant.NewLocal(tenant.Caps{Sessions: 2, TurnsPerMinute: 1, TurnBurst: 1}, 0,
		stagestest.NewClock(time.Unix(1e9, 0)))
	var r *rig
	r = newRig(t, func(c *session.Config, s *stub.Settings) {
		c.Tenants = lim
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
	}, sessiontest.Routes(func() map[string]http.Handler {
		return map[string]http.Handler{"GET /v1/webrtc-as/{tenant}": http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx := tenant.WithCaller(req.Context(), tenant.Caller{Tenant: req.PathValue("tenant")})
			Handler(r.Engine, Config{LoopbackOnly: true}).ServeHTTP(w, req.WithContext(ctx))
		})}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stage := func() view.Stage { v, _ := r.Engine.Stages().Stage(session.StageSession); return v }
	a := r.browserAt(ctx, "/v1/webrtc-as/acme")
	a.wait("acme's first call admitted", has("session"))
	r.browserAt(ctx, "/v1/webrtc-as/acme").wait("acme's second call admitted", has("session"))
	sessiontest.WaitFor(t, "two calls leased", func() bool { return stage().Leased == 2 })
	// The third call is refused as it starts, which may be before its data
	// channel is open: the engine's count of calls ended tells.
	r.browserAt(ctx, "/v1/webrtc-as/acme")
	sessiontest.WaitFor(t, "acme's third call ended rate_limited", func() bool {
		return r.Counter("frontdoor_calls_total") == 1 && r.Engine.Calls() == 2
	})
	if offered := stage().Ledger.Offered; offered != 2 {
		t.Fatalf("the session stage was offered %d calls, want acme's 2", offered)
	}
	r.browserAt(ctx, "/v1/webrtc-as/beta").wait("beta's call admitted", has("session"))
	sessiontest.WaitFor(t, "beta leased", func() bool { return stage().Leased == 3 })

	hello := sessiontest.Speech(t, "hello-8k.wav", 8000)
	a.speak(ctx, hello)
	a.speak(ctx, make([]int16, 8*700))
	a.wait("acme's first turn answered", has("audio_start"))
	a.speak(ctx, hello)
	a.speak(ctx, make([]int16, 8*700))
	sessiontest.WaitFor(t, "acme's call ended by its second turn", func() bool {
		return r.Counter("frontdoor_calls_total") == 2 && r.Engine.Calls() == 2
	})
	if n := r.Counter("frontdoor_protocol_errors_total"); n != 2 {
		t.Fatalf("%v protocol errors, want 2 rate_limited (the third call, the second turn)", n)
	}
}
