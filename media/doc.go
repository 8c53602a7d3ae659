// Package media holds the audio types shared by frontdoor's codecs, pacing,
// voice activity detection and transports (Twilio Media Streams, WebRTC).
//
// The subpackages each do one thing:
//
//   - g711: G.711 µ-law and A-law encode and decode (ITU-T G.191 reference behaviour).
//   - pcm: PCM16 little-endian conversion and a streaming windowed-sinc resampler.
//   - pace: a real-time pacer that releases fixed 20 ms frames on a clock.
//   - vad: an energy-based voice activity detector emitting speech start and end.
//   - wav: a tiny RIFF/WAVE PCM16 reader and writer.
//   - twilio: the Twilio (and Telnyx) Media Streams WebSocket protocol.
//   - gateway: the Codec, Capabilities and generic Conn shared by the other
//     telephony gateways, with a codec package per dialect (Plivo, Exotel,
//     Vonage, Asterisk chan_websocket and AudioSocket, FreeSWITCH
//     mod_audio_stream, Jambonz) and gatewaytest, their simulator.
//   - webrtc: a pion-based server peer negotiating PCMU with a JSON data channel.
//
// Package media imports nothing from stages, session or fallback.
package media
