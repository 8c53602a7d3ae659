// Package webrtc is frontdoor's browser transport: a pion/webrtc peer that
// negotiates G.711 µ-law (PCMU, payload type 0, 8 kHz) in both directions,
// paces outbound audio as 20 ms samples, decodes inbound RTP to PCM16 for the
// voice activity detector, and carries the session's JSON events on a data
// channel. Signalling (offer, answer, trickled ICE candidates) travels as
// Signal values over any message transport the caller supplies, typically
// the /v1/webrtc WebSocket.
package webrtc
