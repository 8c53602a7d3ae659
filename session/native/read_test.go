package native

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// socketPair returns the server's WebSocket (read limit as the handler
// sets it) and the client's connection of one loopback WebSocket.
func socketPair(tb testing.TB) (*WebSocket, *websocket.Conn) {
	tb.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			tb.Error(err)
			return
		}
		c.SetReadLimit(wire.MaxMessageBytes)
		accepted <- c
	}))
	tb.Cleanup(srv.Close)
	cl, _, err := websocket.Dial(tb.Context(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	sc := <-accepted
	tb.Cleanup(func() { _ = cl.CloseNow(); _ = sc.CloseNow() })
	return &WebSocket{Conn: sc}, cl
}

// TestReadNativeReusesBuffer: readNative returns every message whole, in
// a buffer reused from message to message up to maxKeptRead, one of its
// own past it, and the connection's read limit still holds.
func TestReadNativeReusesBuffer(t *testing.T) {
	w, cl := socketPair(t)
	ctx := t.Context()
	msgs := []struct {
		typ  websocket.MessageType
		data []byte
	}{
		{websocket.MessageText, []byte(`{"type":"hello"}`)},
		{websocket.MessageBinary, bytes.Repeat([]byte{1, 2, 3, 4}, 160)},
		{websocket.MessageBinary, bytes.Repeat([]byte{8, 9}, 320)},
		{websocket.MessageBinary, bytes.Repeat([]byte{5}, 1920)},
		{websocket.MessageText, []byte(`{"type":"turn","id":"t1","text":"` + strings.Repeat("a", 3*maxKeptRead) + `"}`)},
		{websocket.MessageBinary, bytes.Repeat([]byte{6, 7}, 320)},
		{websocket.MessageBinary, nil},
	}
	go func() {
		for _, m := range msgs {
			if err := cl.Write(ctx, m.typ, m.data); err != nil {
				return
			}
		}
		_ = cl.Write(ctx, websocket.MessageBinary, make([]byte, wire.MaxMessageBytes+1))
	}()
	var last []byte
	for i, m := range msgs {
		binary, data, err := w.readNative(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if binary != (m.typ == websocket.MessageBinary) || !bytes.Equal(data, m.data) {
			t.Fatalf("message %d: binary %v, %d bytes; want %v, %d bytes", i, binary, len(data), m.typ == websocket.MessageBinary, len(m.data))
		}
		big := len(m.data) > maxKeptRead
		if big && w.buf != nil {
			t.Fatalf("message %d: a %d-byte buffer kept", i, cap(w.buf))
		}
		if !big && (cap(w.buf) > maxKeptRead || &w.buf[:1][0] != &data[:1][0]) {
			t.Fatalf("message %d: the buffer returned is not the one kept", i)
		}
		if i == 2 && &data[:1][0] != &last[:1][0] {
			t.Fatalf("message %d: read into a new buffer, not the reused one", i)
		}
		last = data
	}
	if _, _, err := w.readNative(ctx); !errors.Is(err, websocket.ErrMessageTooBig) {
		t.Fatalf("a message over the read limit: %v", err)
	}
}

// BenchmarkReadNative is one 640-byte binary frame (20 ms at 16 kHz)
// read by the server side of a loopback WebSocket: "readall" as before
// (Conn.Read, a slice grown from 512 bytes per message), "reused" into the
// WebSocket's own buffer (readNative). The client writes in a goroutine of
// its own, so both include a loopback write on the other core.
func BenchmarkReadNative(b *testing.B) {
	frame := bytes.Repeat([]byte{1, 2}, 320)
	for _, name := range []string{"readall", "reused"} {
		b.Run(name, func(b *testing.B) {
			w, cl := socketPair(b)
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					if cl.Write(context.Background(), websocket.MessageBinary, frame) != nil {
						return
					}
				}
			}()
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if name == "readall" {
					_, _, err = w.Conn.Read(ctx)
				} else {
					_, _, err = w.readNative(ctx)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			cancel()
			_ = cl.CloseNow()
		})
	}
}
