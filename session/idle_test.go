package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestCallOutlivesHandler: the native handler returns once the call is
// accepted (so net/http lets go of the request), the call goes on, and
// what a layer in front undoes at the end (WithCallEnd) waits for the
// call's end, not the handler's.
func TestCallOutlivesHandler(t *testing.T) {
	r := newRig(t)
	returned, undone := make(chan struct{}, 1), make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, handlerDone := WithCallEnd(req.Context(), func() { close(undone) })
		testHandler(r.srv, nil).ServeHTTP(w, req.WithContext(ctx))
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
	cl := &client{t: t, conn: c, ctx: t.Context()}
	if m := cl.expect("session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	<-returned // the handler is gone, the call is not
	cl.send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	cl.expect("turn_end")
	select {
	case <-undone:
		t.Fatal("the call's end was undone while the call went on")
	default:
	}
	if r.srv.Calls() != 1 {
		t.Fatalf("%d calls", r.srv.Calls())
	}
	cl.send(map[string]any{"type": "hangup"})
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
	if r.srv.Calls() != 0 {
		t.Fatalf("%d calls after the undo", r.srv.Calls())
	}
}

// TestCallEndWithoutCall: a request that starts no call (a closed server
// refuses it after the upgrade; a plain request) is undone when its
// handler returns.
func TestCallEndWithoutCall(t *testing.T) {
	r := newRig(t)
	r.srv.Close()
	for _, path := range []string{"/v1/session", "/healthz"} {
		undone := make(chan struct{})
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx, handlerDone := WithCallEnd(req.Context(), func() { close(undone) })
			testHandler(r.srv, nil).ServeHTTP(w, req.WithContext(ctx))
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

// testLinger is a writer's idle wait that the test fires.
type testLinger struct {
	c        chan time.Time
	released bool
}

func (l *testLinger) wait() <-chan time.Time { return l.c }
func (l *testLinger) release()               { l.released = true }

// A writer that stops for idleness gives its ring (and its timer) back:
// an idle call holds neither; the next frame grows a ring again.
func TestOutboundIdleWriterGivesRingBack(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	o := newOutbound(OutboundLimits{}, &gen)
	ctx := context.Background()
	l := &testLinger{c: make(chan time.Time, 1)}
	if err := o.push(ctx, frame{gen: 1}); err != nil {
		t.Fatal(err)
	}
	if _, r := o.take(ctx, l); r != popFrame {
		t.Fatalf("take = %d, want a frame", r)
	}
	if o.q == nil {
		t.Fatal("no ring while the writer runs")
	}
	l.c <- time.Now()
	if _, r := o.take(ctx, l); r != popIdle {
		t.Fatalf("take = %d, want idle", r)
	}
	if o.q != nil || !l.released || o.writing {
		t.Fatalf("idle: ring %d frames, released %v, writing %v", len(o.q), l.released, o.writing)
	}
	if err := o.push(ctx, frame{gen: 1}); err != nil || len(o.q) != firstFrames {
		t.Fatalf("push after idle: %v, ring %d", err, len(o.q))
	}
}

// The reader hands over to a fresh goroutine after every text message
// (readLoop): messages are still handled one at a time, in order.
func TestReaderHandOverKeepsOrder(t *testing.T) {
	r := newRig(t)
	c := r.admitted()
	const n = 40
	for i := range n {
		c.sendRaw(`{"type":"x` + itoa(i) + `"}`)
	}
	c.send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	for i := range n {
		m := c.expect("error")
		if want := `unknown message type "x` + itoa(i) + `"`; m.Code != CodeUnknownType || m.Message != want {
			t.Fatalf("error %d: %s %q, want %q", i, m.Code, m.Message, want)
		}
	}
	c.expect("turn_end")
}
