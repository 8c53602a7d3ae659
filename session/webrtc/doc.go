// Package webrtc is the call transport of browsers: GET /v1/webrtc, a pion
// WebRTC peer (package media/webrtc) that carries a session.Engine's call,
// with PCMU audio both ways on its track and the session's JSON events on
// its "events" data channel, signalled over a WebSocket.
package webrtc
