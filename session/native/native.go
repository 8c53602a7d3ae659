package native

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
)

// Name is the transport's name, its calls' in the engine's counts
// (session.Capabilities.Name).
const Name = "native"

// Options configure a Handler.
type Options struct {
	// OriginPatterns are the cross-origin hosts allowed to open the
	// WebSocket (coder/websocket AcceptOptions); same-origin always is.
	OriginPatterns []string
	// Logger (nil: discard).
	Logger *slog.Logger
}

// Handler returns the handler of GET /v1/session: it accepts the
// WebSocket, starts its call on e and returns while the call runs on
// (session.Engine.Start). The engine's heartbeat pings the socket.
func Handler(e *session.Engine, o Options) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: o.OriginPatterns})
		if err != nil {
			log.Debug("websocket accept", "err", err)
			return
		}
		c.SetReadLimit(session.MaxMessageBytes)
		t := &WebSocket{Conn: c}
		stopPings := e.StartHeartbeat(c, func() { _ = c.CloseNow() }, log)
		if !e.Start(r.Context(), t, t.Capabilities(), stopPings) {
			stopPings()
		}
	})
}

// WebSocket is the Transport of GET /v1/session: JSON text messages and
// binary audio frames on a coder/websocket connection.
type WebSocket struct {
	Conn *websocket.Conn
	buf  []byte // readNative's, reused from message to message
}

// maxKeptRead bounds the read buffer a WebSocket keeps between messages:
// a 20 ms frame at 48 kHz PCM16 is 1,920 bytes; a larger message (up to
// session.MaxMessageBytes) is read into a buffer of its own, so that an
// idle call never holds more than this.
const maxKeptRead = 4 << 10

// Recv implements session.Transport. (A call's reader does the same in
// two steps of its own, with Capabilities.ReadNative.)
func (w *WebSocket) Recv(ctx context.Context) (session.ClientEvent, error) {
	typ, data, err := w.Conn.Read(ctx)
	if err != nil {
		return session.ClientEvent{}, err
	}
	return session.DecodeMessage(typ == websocket.MessageBinary, data)
}

// Send implements session.Transport.
func (w *WebSocket) Send(ctx context.Context, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("native: encode %T: %w", msg, err)
	}
	return w.Conn.Write(ctx, websocket.MessageText, b)
}

// SendAudio implements session.Transport.
func (w *WebSocket) SendAudio(ctx context.Context, audio []byte) error {
	return w.Conn.Write(ctx, websocket.MessageBinary, audio)
}

// Close implements session.Transport.
func (w *WebSocket) Close(status session.CloseStatus, reason string) {
	_ = w.Conn.Close(websocket.StatusCode(status), reason)
}

// Capabilities are the WebSocket's: its name ("native"), the undecoded
// reader and Abort.
func (w *WebSocket) Capabilities() session.Capabilities {
	return session.Capabilities{Name: Name, ReadNative: w.readNative, Abort: w.Abort}
}

// readNative reads the next message undecoded (Capabilities.ReadNative)
// into the WebSocket's reused buffer, instead of a fresh slice grown per
// message as Conn.Read does: data is valid until the next call, and the
// call's reader handles each message before it reads the next. The read
// limit (session.MaxMessageBytes) is the connection's, as for Conn.Read.
func (w *WebSocket) readNative(ctx context.Context) (binary bool, data []byte, err error) {
	typ, r, err := w.Conn.Reader(ctx)
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
	if cap(buf) <= maxKeptRead {
		w.buf = buf
	}
	return typ == websocket.MessageBinary, buf, nil
}

// Abort drops the connection without a close handshake (coder/websocket's
// CloseNow): for a caller who stopped reading, whose socket buffers are
// full, a close frame cannot get through and the handshake would only wait
// out its timeouts (5 s to write, 5 s for the answer).
func (w *WebSocket) Abort() { _ = w.Conn.CloseNow() }
