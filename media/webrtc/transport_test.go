package webrtc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSignallingOverWebSocket negotiates the two peers through a real
// WebSocket: the server side answers on the socket, as /v1/webrtc does.
func TestSignallingOverWebSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	serverDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(MaxSignalSize)
		p, err := NewPeer(Config{LoopbackOnly: true}, WebSocketTransport{Conn: ws})
		if err != nil {
			t.Error(err)
			return
		}
		defer p.Close()
		go func() {
			select {
			case <-p.Open():
				_ = p.SendEvent([]byte(`{"type":"ready"}`))
			case <-r.Context().Done():
			}
		}()
		for {
			s, err := ReadSignal(r.Context(), ws)
			if err != nil {
				return
			}
			if err := p.HandleSignal(r.Context(), s); err != nil {
				t.Errorf("server HandleSignal: %v", err)
			}
		}
	}))
	defer srv.Close()

	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 1)
	browser, err := NewPeer(Config{LoopbackOnly: true, OnEvent: func(b []byte) { events <- string(b) }}, WebSocketTransport{Conn: ws})
	if err != nil {
		t.Fatal(err)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			s, err := ReadSignal(ctx, ws)
			if err != nil {
				return
			}
			if err := browser.HandleSignal(ctx, s); err != nil {
				t.Errorf("browser HandleSignal: %v", err)
			}
		}
	}()
	if err := browser.Offer(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-events:
		if got != `{"type":"ready"}` {
			t.Errorf("event %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no event over the data channel")
	}
	browser.Close()
	ws.Close(websocket.StatusNormalClosure, "")
	<-readDone
	<-serverDone
}
