package session

import (
	"net/http"

	"github.com/coder/websocket"
)

// The engine's tests call over the native protocol, whose transport is
// package session/native. A test file of package session cannot import
// it: native imports session, so that would be an import cycle. A file of
// the external test package session_test can, and it is linked into the
// same test binary, against this package with its tests: native_test.go
// sets these in its init, which runs before TestMain, so the tests run
// the real transport instead of a copy of it.
var (
	// NativeHandler is native.Handler(e, native.Options{}).
	NativeHandler func(e *Engine) http.Handler
	// NativeTransport is a native.WebSocket on c.
	NativeTransport func(c *websocket.Conn) Transport
)
