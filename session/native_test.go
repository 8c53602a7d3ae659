package session_test

import (
	"net/http"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/native"
)

// init gives package session's tests the native transport
// (nativehook_test.go says why they cannot import it themselves).
func init() {
	session.NativeHandler = func(e *session.Engine) http.Handler { return native.Handler(e, native.Options{}) }
	session.NativeTransport = func(c *websocket.Conn) session.Transport { return &native.WebSocket{Conn: c} }
}
