// Package web is frontdoor's demo page: a softphone for synthetic and
// microphone calls and a live view of every admission stage, served at / by
// frontdoor serve.
//
// Handler returns the page, its assets and a small burst API:
//
//	GET    /           the page
//	GET    /assets/... its CSS and JavaScript (embedded; nothing is fetched
//	                   from any other host, and the Content-Security-Policy
//	                   says so to the browser)
//	POST   /v1/burst   {"callers": N, "rate": R, "turns": T} starts N
//	                   synthetic callers through a Burster (frontdoor
//	                   serve's runs its load generator; 202, or 409
//	                   while one runs, 501 when none is configured)
//	GET    /v1/burst   the running or last burst
//	DELETE /v1/burst   stops the running burst
//
// The page itself speaks the server's own endpoints: /v1/session (the call
// protocol of docs/PROTOCOL.md), /v1/webrtc (signalling, see below),
// /v1/stages (polled every 500 ms), /v1/agents (the handoff agents' socket)
// and /v1/burst.
//
// # Why plain HTML, CSS and JavaScript
//
// The page is a handful of hand-written files embedded with go:embed: no
// Node toolchain, no bundler, no generated output to keep in step with its
// source. A new user runs go build and has the page; a reviewer reads in
// the repository exactly what the browser runs. The browser APIs it needs
// (WebSocket, WebAudio, RTCPeerConnection, getUserMedia, SVG, ES modules,
// CSS grid) are standard in current Chromium and Firefox, so a build step
// would buy only syntax. The chart is a few dozen lines of SVG drawn by the
// page's own script rather than a charting library, which would have to be
// vendored to keep the page free of other hosts.
//
// # WebRTC signalling the page speaks
//
// On /v1/webrtc, JSON text messages both ways: the page sends
// {"type":"offer","sdp":"..."} and trickles {"type":"candidate",
// "candidate":{candidate, sdpMid, sdpMLineIndex}}; the server answers
// {"type":"answer","sdp":"..."} and trickles candidates the same way
// (the end of gathering is not signalled). The page creates a data channel labelled
// "events" before its offer; the session protocol's JSON messages travel
// on it both ways. The microphone track is sent and the reply received on
// one audio transceiver (PCMU is negotiated by the server). This is the
// signalling of package media/webrtc (Signal).
package web
