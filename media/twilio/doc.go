// Package twilio speaks the Twilio Media Streams bidirectional WebSocket
// protocol (and Telnyx's snake_case dialect of it) for frontdoor's
// GET /v1/twilio endpoint.
//
// It has four parts:
//
//   - Decode and the Encode* functions: typed messages and a strict decoder
//     that returns typed errors for unknown events, wrong JSON types, bad
//     base64 and oversize frames.
//   - Tracker: turns outbound marks and their echoes into how much of each
//     utterance the caller has heard, for truncation after a barge-in (an
//     alias of gateway.Tracker, which every gateway dialect shares).
//   - Conn: a connection helper over github.com/coder/websocket that reads
//     typed messages and sends paced 20 ms µ-law media, marks and clear, in
//     text frames only.
//   - ValidateSignature: the X-Twilio-Signature check for the upgrade request.
//
// Package twiliotest holds a scripted gateway that plays Twilio's side.
package twilio
