package session

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// transportRoutes serve /v1/stages as package session/server does, and
// /v1/unnamed: the native protocol on a transport that declares no name.
func transportRoutes(r **rig) sessiontest.Routes {
	return func() map[string]http.Handler {
		return map[string]http.Handler{
			"GET /v1/stages": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode((*r).Engine.Stages())
			}),
			"GET /v1/unnamed": http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				c, err := websocket.Accept(w, req, nil)
				if err != nil {
					return
				}
				c.SetReadLimit(wire.MaxMessageBytes)
				(*r).Engine.Run(req.Context(), NativeTransport(c), Capabilities{})
			}),
		}
	}
}

// stagesCalls reads calls and calls_by_transport from GET /v1/stages.
func (r *rig) stagesCalls() (int, map[string]int) {
	r.T.Helper()
	resp, err := http.Get(r.HTTP.URL + "/v1/stages")
	if err != nil {
		r.T.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Calls            int            `json:"calls"`
		CallsByTransport map[string]int `json:"calls_by_transport"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		r.T.Fatal(err)
	}
	return v.Calls, v.CallsByTransport
}

// transportGauge reads frontdoor_sessions_by_transport, by transport.
func (r *rig) transportGauge() map[string]float64 {
	r.T.Helper()
	mfs, err := r.Engine.Registry().Gather()
	if err != nil {
		r.T.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_sessions_by_transport" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "transport" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return got
}

// waitCalls waits until /v1/stages counts want by transport, and calls
// their sum.
func (r *rig) waitCalls(what string, want map[string]int) {
	r.T.Helper()
	sum := 0
	for _, n := range want {
		sum += n
	}
	var calls int
	var by map[string]int
	ok := func() bool {
		calls, by = r.stagesCalls()
		return calls == sum && maps.Equal(by, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			r.T.Fatalf("%s: /v1/stages calls %d by transport %v, want %v", what, calls, by, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCallsByTransport: /v1/stages and /metrics count the calls in progress
// by their transport's name (an unnamed one as other), over real
// WebSockets, and every way a call ends takes it off: a refusal at the
// session stage, a caller who vanishes, a hangup, a message over the read
// limit and a drain that times out.
func TestCallsByTransport(t *testing.T) {
	var r *rig
	r = newRig(t, func(c *Config, _ *stub.Settings) {
		c.Session = stages.Limits{Slots: 3, Waiting: 1, MaxAge: 5 * time.Second}
	}, transportRoutes(&r))
	r.waitCalls("no calls", map[string]int{})
	if calls, by := r.stagesCalls(); by == nil || calls != 0 {
		t.Fatalf("calls %d, calls_by_transport %v: want 0 and an empty object", calls, by)
	}

	a := r.Admitted()
	b := r.Admitted()
	u := r.DialPath("/v1/unnamed")
	if m := u.Expect("session"); m.Disposition != "admitted" {
		t.Fatalf("unnamed caller's session %+v", m)
	}
	r.waitCalls("two native calls and an unnamed one", map[string]int{"native": 2, view.TransportOther: 1})
	if g := r.transportGauge(); g["native"] != 2 || g[view.TransportOther] != 1 {
		t.Fatalf("frontdoor_sessions_by_transport %v, want native 2, other 1", g)
	}

	// A queued caller counts; one refused at the session stage counts no
	// longer once refused.
	q := r.Dial()
	if m := q.Expect("session"); m.Disposition != "queued" {
		t.Fatalf("fourth caller's session %+v", m)
	}
	r.waitCalls("a queued caller", map[string]int{"native": 3, view.TransportOther: 1})
	refused := r.Dial()
	all := refused.Until(sessiontest.IsType("prompt"))
	if m := sessiontest.LastOf(all, "session"); m.Disposition != "overloaded" {
		t.Fatalf("fifth caller: %v", sessiontest.Types(all))
	}
	if _, err := refused.Read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("refused caller's close %v, want 1013", err)
	}
	r.waitCalls("the refused caller gone", map[string]int{"native": 3, view.TransportOther: 1})

	// The queued caller vanishes; a hangs up; b sends a message over the
	// read limit.
	q.Conn.CloseNow()
	r.waitCalls("the queued caller gone", map[string]int{"native": 2, view.TransportOther: 1})
	a.Send(map[string]any{"type": "hangup"})
	if _, err := a.Read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("hangup close %v", err)
	}
	r.waitCalls("the hangup", map[string]int{"native": 1, view.TransportOther: 1})
	b.SendRaw(`{"type":"turn","id":"big","text":"` + strings.Repeat("x", wire.MaxMessageBytes) + `"}`)
	if _, err := b.Read(); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("oversize close %v, want 1009", err)
	}
	r.waitCalls("the oversize message", map[string]int{view.TransportOther: 1})

	// A drain whose deadline has passed ends the unnamed call (1001).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Engine.Drain(ctx); err != ErrDrainTimeout {
		t.Fatalf("drain %v, want ErrDrainTimeout", err)
	}
	if _, err := u.Read(); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("drained call's close %v, want 1001", err)
	}
	r.waitCalls("the drain", map[string]int{})
	if g := r.transportGauge(); len(g) != 2 || g["native"] != 0 || g[view.TransportOther] != 0 {
		t.Fatalf("frontdoor_sessions_by_transport %v after every call ended, want native 0, other 0", g)
	}
	if n := r.Engine.Calls(); n != 0 {
		t.Fatalf("Calls %d after every call ended", n)
	}
}
