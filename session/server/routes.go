package server

import (
	"strings"

	"github.com/frontdoorhq/frontdoor/session/telephony"
)

// Route is one media route of the server: where a transport is served and
// what its WebSocket handshake accepts, for the layer in front
// (session/guard) to check an upgrade the way the route's own clients
// make it.
type Route struct {
	// Path is the route's path; with Prefix, the paths under it too
	// (/v1/twilio/{token}).
	Path   string
	Prefix bool
	// Dialect names the telephony gateway dialect served here ("" for
	// the browser routes).
	Dialect string
	// Subprotocols are the WebSocket subprotocols the route answers when
	// offered, in its order of preference; Required says its clients
	// always offer one of them.
	Subprotocols []string
	Required     bool
	// Browser says the route's callers are browsers, which carry their
	// credentials as a subprotocol (the guard's frontdoor.v1 and
	// frontdoor.token.<token>) because they cannot set headers. A gateway
	// route never depends on a subprotocol its gateway cannot send:
	// its credentials travel as the gateway can send them (Basic or
	// Bearer authentication, a start parameter, a call token in the path).
	Browser bool
}

// Routes returns the media routes the server mounts (a fresh slice).
func Routes() []Route {
	rs := []Route{
		{Path: "/v1/session", Browser: true},
		{Path: "/v1/webrtc", Browser: true},
		{Path: "/v1/twilio", Dialect: "twilio"},
		{Path: "/v1/twilio/", Prefix: true, Dialect: "twilio"},
	}
	for _, d := range telephony.GatewayDialects {
		ps, req := telephony.GatewaySubprotocols(d)
		rs = append(rs, Route{Path: "/v1/" + d, Dialect: d, Subprotocols: ps, Required: req})
	}
	return rs
}

// routeTable is the table RouteOf reads; Routes hands out copies.
var routeTable = Routes()

// RouteOf returns the media route that serves path (its slices are the
// table's: read them, do not modify them); ok is false for a path that is
// not a media route.
func RouteOf(path string) (r Route, ok bool) {
	for _, r := range routeTable {
		if r.Path == path || r.Prefix && strings.HasPrefix(path, r.Path) {
			return r, true
		}
	}
	return Route{}, false
}
