package session

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/coder/websocket"
)

// The engine's tests call over the native protocol, whose transport
// (package session/native) imports the engine: a test of the engine cannot
// import it. testNative is that transport's handler and testWebSocket its
// Transport, as package native has them (native.Handler, native.WebSocket);
// package native's own tests run the real ones.

func testNative(e *Engine) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(MaxMessageBytes)
		t := &testWebSocket{conn: c}
		stopPings := e.StartHeartbeat(c, func() { _ = c.CloseNow() }, e.log)
		caps := Capabilities{Name: "native", ReadNative: t.readNative, Abort: func() { _ = c.CloseNow() }}
		if !e.Start(r.Context(), t, caps, stopPings) {
			stopPings()
		}
	}
}

type testWebSocket struct{ conn *websocket.Conn }

func (w *testWebSocket) Recv(ctx context.Context) (ClientEvent, error) {
	binary, data, err := w.readNative(ctx)
	if err != nil {
		return ClientEvent{}, err
	}
	return DecodeMessage(binary, data)
}

func (w *testWebSocket) readNative(ctx context.Context) (bool, []byte, error) {
	typ, data, err := w.conn.Read(ctx)
	return typ == websocket.MessageBinary, data, err
}

func (w *testWebSocket) Send(ctx context.Context, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return w.conn.Write(ctx, websocket.MessageText, b)
}

func (w *testWebSocket) SendAudio(ctx context.Context, audio []byte) error {
	return w.conn.Write(ctx, websocket.MessageBinary, audio)
}

func (w *testWebSocket) Close(status CloseStatus, reason string) {
	_ = w.conn.Close(websocket.StatusCode(status), reason)
}
