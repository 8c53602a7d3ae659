// Package server is frontdoor's HTTP and operations server: it wires the
// transports to a session.Engine on their routes (GET /v1/session, package
// session/native; /v1/twilio, the gateway dialects' /v1/plivo, /v1/exotel,
// /v1/vonage, /v1/asterisk, /v1/freeswitch and /v1/jambonz, and /v1/webrtc) and serves the operations
// endpoints beside them: /healthz, /readyz, /metrics and /v1/stages, with
// the page and extra handlers it is given.
//
// It holds no call state of its own: admission, calls and their drain are
// the engine's, and a Server is an Engine with its HTTP handler.
package server
