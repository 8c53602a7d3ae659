package guard

import (
	"net/http"
	"slices"
	"strings"

	"github.com/frontdoorhq/frontdoor/session/server"
)

// Subprotocols a browser may offer. A browser cannot set headers on a
// WebSocket, so it offers its token as a subprotocol:
//
//	new WebSocket(url, ["frontdoor.v1", "frontdoor.token." + token])
//
// The guard answers with frontdoor.v1 when offered, else with the token
// protocol itself (a browser fails a handshake whose answer is not one of
// the protocols it offered, and coder/websocket would otherwise accept with
// none).
const (
	ProtocolV1          = "frontdoor.v1"
	TokenProtocolPrefix = "frontdoor.token."
	// TokenQuery is the query parameter that may carry the token. Prefer
	// the header or the subprotocol: URLs end up in proxies' logs.
	TokenQuery = "access_token"
)

// token finds the request's token: Authorization: Bearer, then a token
// subprotocol, then the query parameter.
func token(r *http.Request) (tok string, viaProtocol bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t), false
		}
	}
	for _, p := range offered(r) {
		if t, ok := strings.CutPrefix(p, TokenProtocolPrefix); ok {
			return t, true
		}
	}
	return r.URL.Query().Get(TokenQuery), false
}

func offered(r *http.Request) []string {
	var ps []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// pickSubprotocol chooses the answer to the offered subprotocols: "" when
// none were offered; ok is false when some were offered but none is one
// the route accepts. A media route accepts what the server's route table
// declares for it (a gateway's own subprotocol: jambonz's
// audio.jambonz.org, Asterisk's media), preferred in the table's order; a
// browser route, or a path that is no media route, also ours
// (frontdoor.v1, then a token protocol). A gateway route does not take
// ours: its gateway cannot send them.
func pickSubprotocol(r *http.Request) (p string, ok bool) {
	ps := offered(r)
	if len(ps) == 0 {
		return "", true
	}
	rt, media := server.RouteOf(r.URL.Path)
	for _, want := range rt.Subprotocols {
		if slices.Contains(ps, want) {
			return want, true
		}
	}
	if media && !rt.Browser {
		return "", false
	}
	if slices.Contains(ps, ProtocolV1) {
		return ProtocolV1, true
	}
	for _, p := range ps {
		if strings.HasPrefix(p, TokenProtocolPrefix) {
			return p, true
		}
	}
	return "", false
}

// acceptedSubprotocols names what the route of path accepts, for the
// refusal's message.
func acceptedSubprotocols(path string) string {
	rt, media := server.RouteOf(path)
	if media && !rt.Browser {
		if len(rt.Subprotocols) == 0 {
			return "none (offer no subprotocol)"
		}
		return strings.Join(rt.Subprotocols, " or ")
	}
	return ProtocolV1 + " or " + TokenProtocolPrefix + "<token>"
}
