package native

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
)

// TestCallOutlivesHandler: the native handler returns once the call is
// accepted (so net/http lets go of the request), the call goes on, and
// what a layer in front undoes at the end (WithCallEnd) waits for the
// call's end, not the handler's.
func TestCallOutlivesHandler(t *testing.T) {
	r := newRig(t)
	returned, undone := make(chan struct{}, 1), make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, handlerDone := tenant.WithCallEnd(req.Context(), func() { close(undone) })
		r.handler().ServeHTTP(w, req.WithContext(ctx))
		handlerDone()
		returned <- struct{}{}
	}))
	defer front.Close()
	url := "ws" + strings.TrimPrefix(front.URL, "http") + "/v1/session"
	c, _, err := websocket.Dial(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	cl := &sessiontest.Client{T: t, Conn: c, Ctx: t.Context()}
	if m := cl.Expect("session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	<-returned // the handler is gone, the call is not
	cl.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	cl.Expect("turn_end")
	select {
	case <-undone:
		t.Fatal("the call's end was undone while the call went on")
	default:
	}
	if r.Engine.Calls() != 1 {
		t.Fatalf("%d calls", r.Engine.Calls())
	}
	if by := r.Engine.CallsByTransport(); len(by) != 1 || by[Name] != 1 {
		t.Fatalf("calls by transport %v, want one %s", by, Name)
	}
	cl.Send(map[string]any{"type": "hangup"})
	for { // to the server's close, which the close handshake answers
		if _, _, err := c.Read(t.Context()); err != nil {
			break
		}
	}
	select {
	case <-undone:
	case <-time.After(5 * time.Second):
		t.Fatal("the call's end was never undone")
	}
	if r.Engine.Calls() != 0 || len(r.Engine.CallsByTransport()) != 0 {
		t.Fatalf("%d calls (%v) after the undo", r.Engine.Calls(), r.Engine.CallsByTransport())
	}
}

// TestCallEndWithoutCall: a request that starts no call (a closed server
// refuses it after the upgrade; a plain request) is undone when its
// handler returns.
func TestCallEndWithoutCall(t *testing.T) {
	r := newRig(t)
	r.Engine.Close()
	for _, path := range []string{"/v1/session", "/healthz"} {
		undone := make(chan struct{})
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx, handlerDone := tenant.WithCallEnd(req.Context(), func() { close(undone) })
			r.handler().ServeHTTP(w, req.WithContext(ctx))
			handlerDone()
		}))
		if path == "/v1/session" {
			c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(front.URL, "http")+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Read(t.Context()); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Errorf("closed server: %v, want 1013", err)
			}
			c.CloseNow()
		} else {
			resp, err := http.Get(front.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		select {
		case <-undone:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: never undone", path)
		}
		front.Close()
	}
}
