package guard

import (
	"net/http"
	"strings"
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
// none were offered; ok is false when some were offered but none is ours.
func pickSubprotocol(r *http.Request) (p string, ok bool) {
	ps := offered(r)
	if len(ps) == 0 {
		return "", true
	}
	for _, p := range ps {
		if p == ProtocolV1 {
			return p, true
		}
	}
	for _, p := range ps {
		if strings.HasPrefix(p, TokenProtocolPrefix) {
			return p, true
		}
	}
	return "", false
}
