package native

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/internal/ablate"
	"github.com/frontdoorhq/frontdoor/session/wire"
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
		c.SetReadLimit(wire.MaxMessageBytes)
		// Identities and sizes only at debug: never a message's content.
		log.Debug("native: websocket accepted", "origin", r.Header.Get("Origin"))
		t := &WebSocket{Conn: c, log: log}
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
	buf  []byte       // readNative's, reused from message to message
	log  *slog.Logger // debug lines of the socket's life; nil: none

	mu    sync.Mutex
	bound context.Context // the context whose end closes Conn (ioContext); nil until the first
}

// ioContext is the context Conn's reads and writes take for ctx.
// coder/websocket arms a context.AfterFunc per frame read or written
// (two per message read) for a context that can end, to drop the
// connection when it does; at 50 frames a second each way that is a few
// per cent of the server's CPU. So the first context that can end is
// bound to the connection once, by one AfterFunc that drops it (CloseNow,
// what coder/websocket itself does), and the reads and writes under that
// context take one that cannot end: a blocked read or write then ends
// when the connection is dropped, as before, with net.ErrClosed in place
// of the context's error. Any other context is passed as it is.
func (w *WebSocket) ioContext(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound == nil {
		if ctx.Err() != nil {
			return ctx
		}
		w.bound = ctx
		context.AfterFunc(ctx, func() { _ = w.Conn.CloseNow() })
	}
	if w.bound == ctx {
		return context.Background()
	}
	return ctx
}

// maxKeptRead bounds the read buffer a WebSocket keeps between messages:
// a 20 ms frame at 48 kHz PCM16 is 1,920 bytes; a larger message (up to
// session.MaxMessageBytes) is read into a buffer of its own, so that an
// idle call never holds more than this.
const maxKeptRead = 4 << 10

// Recv implements session.Transport. (A call's reader does the same in
// two steps of its own, with Capabilities.ReadNative.)
func (w *WebSocket) Recv(ctx context.Context) (wire.ClientEvent, error) {
	typ, data, err := w.Conn.Read(w.ioContext(ctx))
	if err != nil {
		return wire.ClientEvent{}, err
	}
	return wire.DecodeMessage(typ == websocket.MessageBinary, data)
}

// Send implements session.Transport.
func (w *WebSocket) Send(ctx context.Context, msg wire.Message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("native: encode %T: %w", msg, err)
	}
	return w.Conn.Write(w.ioContext(ctx), websocket.MessageText, b)
}

// SendAudio implements session.Transport.
func (w *WebSocket) SendAudio(ctx context.Context, audio []byte) error {
	return w.Conn.Write(w.ioContext(ctx), websocket.MessageBinary, audio)
}

// Close implements session.Transport.
func (w *WebSocket) Close(status wire.CloseStatus, reason string) {
	if w.log != nil {
		w.log.Debug("native: closing websocket", "status", int(status), "reason", reason)
	}
	_ = w.Conn.Close(websocket.StatusCode(status), reason)
}

// Capabilities are the WebSocket's: its name ("native"), the undecoded
// reader, Abort, reusable audio (coder/websocket has copied a frame into
// its buffered writer, or written it, once Write returns) and inline
// audio (Write waits for the socket, never for playback).
func (w *WebSocket) Capabilities() session.Capabilities {
	return session.Capabilities{Name: Name, ReadNative: w.readNative, Abort: w.Abort, ReusableAudio: true, InlineAudio: true}
}

// readNative reads the next message undecoded (Capabilities.ReadNative)
// into the WebSocket's reused buffer, instead of a fresh slice grown per
// message as Conn.Read does: data is valid until the next call, and the
// call's reader handles each message before it reads the next. The read
// limit (session.MaxMessageBytes) is the connection's, as for Conn.Read.
func (w *WebSocket) readNative(ctx context.Context) (binary bool, data []byte, err error) {
	typ, r, err := w.Conn.Reader(w.ioContext(ctx))
	for err == nil && typ == websocket.MessageBinary && ablate.Hear { // (a measurement build only)
		if _, err = io.Copy(io.Discard, r); err == nil {
			typ, r, err = w.Conn.Reader(w.ioContext(ctx))
		}
	}
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
func (w *WebSocket) Abort() {
	if w.log != nil {
		w.log.Debug("native: websocket dropped without a close handshake")
	}
	_ = w.Conn.CloseNow()
}
