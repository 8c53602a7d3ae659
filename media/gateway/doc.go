// Package gateway is the part of every telephony gateway's media protocol
// that does not depend on the dialect: the events a gateway sends, the
// commands it takes, a Codec interface that one small package per dialect
// implements, and a Conn that reads and decodes a gateway's messages and
// sends it audio paced in frames (media/pace), a mark after each utterance
// and a clear on barge-in, returning what the caller heard (Tracker).
//
// A dialect is a Codec plus its Capabilities: whether the gateway echoes
// marks (and whether a clear echoes the pending ones or drops them), whether
// it has a clear, DTMF and a hang-up command, and the audio format it
// carries. The Conn uses the capabilities, never the dialect's name, so one
// code path serves Plivo, Exotel, Vonage, Asterisk (chan_websocket and
// AudioSocket), FreeSWITCH mod_audio_stream and Jambonz alike; the codecs
// live in the subpackages of this one, and gatewaytest plays the gateway's
// side of any of them.
//
// A Conn runs over a Link, one message at a time: a coder/websocket
// connection (WebSocketLink) or a framed TCP stream (AudioSocket's link, in
// package audiosocket). Package gateway has no notion of a call: admission,
// turns and barge-in belong to the session layer that uses a Conn.
package gateway
