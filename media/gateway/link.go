package gateway

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
)

// Link carries whole messages. ReadFrame is called from one goroutine;
// WriteFrame may be called from several (the Conn serializes its own).
type Link interface {
	ReadFrame(ctx context.Context) (Frame, error)
	WriteFrame(ctx context.Context, f Frame) error
	// Close ends the link without waiting for the peer.
	Close() error
}

// WebSocketLink is a Link over a coder/websocket connection.
type WebSocketLink struct{ WS *websocket.Conn }

// NewWebSocketLink wraps ws and bounds what one message may hold.
func NewWebSocketLink(ws *websocket.Conn, readLimit int) *WebSocketLink {
	if readLimit > 0 {
		ws.SetReadLimit(int64(readLimit))
	}
	return &WebSocketLink{WS: ws}
}

// ReadFrame reads one message. As with coder/websocket, a ctx that ends
// closes the connection: pass one that lives as long as it.
func (l *WebSocketLink) ReadFrame(ctx context.Context) (Frame, error) {
	typ, data, err := l.WS.Read(ctx)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Binary: typ == websocket.MessageBinary, Data: data}, nil
}

// WriteFrame writes one message.
func (l *WebSocketLink) WriteFrame(ctx context.Context, f Frame) error {
	typ := websocket.MessageText
	if f.Binary {
		typ = websocket.MessageBinary
	}
	return l.WS.Write(ctx, typ, f.Data)
}

// Close drops the connection without a close handshake.
func (l *WebSocketLink) Close() error { return l.WS.CloseNow() }

// Accept upgrades r to a WebSocket with compression off and the codec's read
// limit, and wraps it in a Conn. accept may be nil.
func Accept(w http.ResponseWriter, r *http.Request, accept *websocket.AcceptOptions, codec Codec, opts Options) (*Conn, *websocket.Conn, error) {
	ws, err := websocket.Accept(w, r, accept)
	if err != nil {
		return nil, nil, err
	}
	return NewConn(NewWebSocketLink(ws, codec.Capabilities().MaxMessage), codec, opts), ws, nil
}
