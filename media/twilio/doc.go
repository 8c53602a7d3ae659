// Package twilio speaks the Twilio Media Streams bidirectional WebSocket
// protocol (and Telnyx's snake_case dialect of it) for frontdoor's
// GET /v1/twilio endpoint.
//
// It has three parts:
//
//   - Decode and the Encode* functions: typed messages and a strict decoder
//     that returns typed errors for unknown events, wrong JSON types, bad
//     base64 and oversize frames.
//   - Codec: the dialect as a gateway.Codec, so that the one gateway.Conn
//     every gateway shares (pacing, marks, clear, the Tracker of what was
//     heard) carries Twilio's and Telnyx's streams too, in production as in
//     tests. There is no Twilio-only connection.
//   - ValidateRequest: the X-Twilio-Signature check for the upgrade request.
//
// Package twiliotest holds a scripted gateway that plays Twilio's side.
package twilio
