package webrtc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// WebSocketTransport sends signals as JSON text frames on a coder/websocket
// connection, such as the one a browser opened to /v1/webrtc.
type WebSocketTransport struct {
	Conn    *websocket.Conn
	Timeout time.Duration // per write; default 5 s
}

// Send writes s as one text frame. The write gets its own timeout rather
// than ctx's cancellation, since a write whose context ends closes the
// connection in coder/websocket.
func (t WebSocketTransport) Send(ctx context.Context, s Signal) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("webrtc: %w", err)
	}
	d := t.Timeout
	if d <= 0 {
		d = 5 * time.Second
	}
	wctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return t.Conn.Write(wctx, websocket.MessageText, b)
}

// ReadSignal reads the next frame from ws and decodes it as a Signal. ctx
// should be the connection's long-lived context (see coder/websocket).
func ReadSignal(ctx context.Context, ws *websocket.Conn) (Signal, error) {
	typ, data, err := ws.Read(ctx)
	if err != nil {
		return Signal{}, err
	}
	if typ != websocket.MessageText {
		return Signal{}, fmt.Errorf("%w: binary frame", ErrSignal)
	}
	return DecodeSignal(data)
}
