// Package wire is the native protocol of GET /v1/session (docs/PROTOCOL.md)
// as Go types: the client's events and their decoding, the server's
// messages, error codes, close statuses and the bounds on client input.
//
// Every transport speaks in these types, whatever its own wire: the call
// engine (package session) receives a ClientEvent from each and hands each
// a Message to write; the native WebSocket writes a Message as its JSON,
// a phone or WebRTC transport acts on the ones it knows. So a transport
// imports this package for the protocol, not the engine.
//
// Message is sealed: only this package's message types implement it, so
// that Transport.Send is typed and every message's JSON is the one the
// spec documents.
package wire

import "time"

// Message is one server message: a pointer to a struct that marshals to
// its JSON in docs/PROTOCOL.md (*SessionMsg, *AudioStartMsg, ...). The
// unexported method seals the set.
type Message interface {
	message()
}

func (*SessionMsg) message()     {}
func (*DispositionMsg) message() {}
func (*TextMsg) message()        {}
func (*AudioStartMsg) message()  {}
func (*AudioEndMsg) message()    {}
func (*TranscriptMsg) message()  {}
func (*TurnEndMsg) message()     {}
func (*InterruptedMsg) message() {}
func (*PromptMsg) message()      {}
func (*ErrorMsg) message()       {}
func (*OfferMsg) message()       {}
func (*FallbackMsg) message()    {}

// Bounds on client input.
const (
	MaxMessageBytes = 64 << 10         // read limit of one WebSocket message
	MaxTurnText     = 4096             // bytes of text in one turn
	MaxTurnID       = 128              // bytes of a turn id
	MaxTurnAge      = 10 * time.Minute // largest age_ms accepted
	// MaxFrameMS is the longest reply frame a caller may declare
	// (hello.audio.frame_ms, a multiple of 20): six 20 ms frames in one
	// write, a sixth of the writes and wake-ups of 20 ms framing.
	MaxFrameMS = 120
)

// CloseStatus is the reason a call's connection ends, in WebSocket terms;
// transports without close codes map it to their own ending.
type CloseStatus int

// Close statuses a call ends with.
const (
	CloseNormal    CloseStatus = 1000 // hangup
	CloseGoingAway CloseStatus = 1001 // server shutdown after the drain timeout
	ClosePolicy    CloseStatus = 1008 // the caller stopped reading
	CloseTooBig    CloseStatus = 1009 // a message over the read limit
	CloseTryLater  CloseStatus = 1013 // refused or expired by the session stage
	CloseInternal  CloseStatus = 1011
)
