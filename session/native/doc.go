// Package native is frontdoor's own call transport: the protocol of GET
// /v1/session (docs/PROTOCOL.md), JSON text messages and binary audio
// frames on a WebSocket, carrying one call of a session.Engine.
//
// Its handler accepts the WebSocket, starts the call on the engine
// (Engine.Start) and returns: the call runs on in goroutines of its own,
// reading the next message undecoded so that an idle call waits on a
// small stack (session.Capabilities.ReadNative).
package native
