package session

import (
	"context"
	"encoding/json"
	"io"
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

type testWebSocket struct {
	conn *websocket.Conn
	buf  []byte
}

func (w *testWebSocket) Recv(ctx context.Context) (ClientEvent, error) {
	typ, data, err := w.conn.Read(ctx)
	if err != nil {
		return ClientEvent{}, err
	}
	return DecodeMessage(typ == websocket.MessageBinary, data)
}

func (w *testWebSocket) readNative(ctx context.Context) (bool, []byte, error) {
	typ, r, err := w.conn.Reader(ctx)
	if err != nil {
		return false, nil, err
	}
	buf := w.buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, nil, err
		}
	}
	w.buf = nil
	if cap(buf) <= 4<<10 {
		w.buf = buf
	}
	return typ == websocket.MessageBinary, buf, nil
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
