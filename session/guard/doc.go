// Package guard decides who may call and how often.
//
// A Guard sits in front of the session server's HTTP handler. For every
// request it finds the path's Role (caller for /v1/session and /v1/webrtc,
// agent for /v1/agents, operator for /v1/callbacks, /v1/stages, /metrics and
// /v1/burst, none for the page and health checks), authenticates the token
// the request carries (API keys or HMAC-signed JWTs, see Authenticator) and
// refuses, before any WebSocket upgrade and before any stage is touched:
//
//   - 401 when a role is needed and the token is missing, bad or expired;
//   - 403 when the token lacks the role;
//   - 429 with Retry-After when the tenant is over its own cap of calls at
//     once (the tenant is at fault);
//   - 503 with Retry-After when the service is full (Config.Busy; the
//     service is at fault).
//
// An admitted call carries its tenant (tenant.WithCaller): its jobs use the
// tenant's share of each stage's queue, and each turn spends one token of
// the tenant's turns-per-minute budget (over it: `error` rate_limited and
// close 1008).
//
// A telephony stream (/v1/twilio/<token>) carries no bearer token: its
// tenant comes from a signed, single-use call token in its path
// (CallTokens), and it then counts against the same tenant caps. The
// other gateways' streams (/v1/plivo, /v1/exotel, ...) carry neither: their
// transport checks the gateway token, and they pass the service's overload
// check like any call.
//
// The package also builds the hardened http.Server (timeouts, header
// limit) and a net.Listener that bounds the connections at once, in all and
// per source address (X-Forwarded-For only from trusted proxies), keeps a
// small budget for health checks, and closes idle ones (Listen). docs/SECURITY.md states the threat model and every
// default.
package guard
