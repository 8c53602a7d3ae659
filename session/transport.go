package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Transport carries one call: typed client events in, server messages and
// audio out. The native WebSocket protocol (package session/native) is one
// Transport; Twilio Media Streams and WebRTC data channels are others,
// driving the same Call through Engine.Run or Engine.Start.
type Transport interface {
	// Recv blocks for the next client event. A *wire.ProtocolError is bad input:
	// the call answers it with an `error` message and calls Recv again. Any
	// other error means the caller is gone. Only the call's reader calls it.
	Recv(ctx context.Context) (wire.ClientEvent, error)
	// Send writes one server message (a *wire.SessionMsg,
	// *wire.AudioStartMsg, ...: each marshals to its JSON in
	// docs/PROTOCOL.md). Only the call's single writer calls Send and
	// SendAudio.
	Send(ctx context.Context, msg wire.Message) error
	// SendAudio writes one frame of reply audio in the format announced by
	// the preceding AudioStartMsg.
	SendAudio(ctx context.Context, audio []byte) error
	// Close ends the connection and makes a blocked Recv return. It may
	// be called more than once.
	Close(status wire.CloseStatus, reason string)
}

// Capabilities are what a transport can do beyond the Transport contract.
// A transport declares them when it starts its call (Engine.Run); the call
// uses what is declared and never looks for abilities by type assertion.
// The zero value declares none.
type Capabilities struct {
	// Name names the transport for operators ("native", "twilio",
	// "plivo", "sip", ...): the calls in progress are counted by it.
	Name string
	// ReadNative, when set, reads the native protocol's next message
	// undecoded (binary audio, or a JSON text message), for the call's
	// reader to decode once the wait has returned: a call that has gone
	// quiet then waits on a small stack (Call.readLoop). Recv is not used.
	// data may be the transport's reused buffer: it is valid until the
	// next call, and the call handles each message before the next read.
	ReadNative func(ctx context.Context) (binary bool, data []byte, err error)
	// Abort drops the connection at once, without a close handshake, for
	// a caller who stopped reading (nil: the call cancels the context of
	// the transport's blocked Recv and Send instead).
	Abort func()
	// ReusableAudio says that SendAudio keeps nothing of the frame it is
	// given once it returns (it is written, or copied): the engine then
	// encodes a later frame into the same buffer. Unset, a frame's buffer
	// is the transport's after SendAudio.
	ReusableAudio bool
	// InlineAudio says that SendAudio returns once the frame is handed to
	// the connection, never waiting for playback (a WebSocket): a reply's
	// frames are then written by the goroutine that makes them when the
	// call's writer is not running, with no hand-off to it
	// (outbound.Config.Inline). A transport that paces its own writes
	// leaves it unset.
	InlineAudio bool
	// Interrupt stops the caller's playback on a barge-in, before
	// `interrupted` is sent, and reports how much of turn's reply audio
	// was played (nil: what was heard is estimated from the audio sent).
	Interrupt func(ctx context.Context, turn string) (played time.Duration, ok bool)
	// Keypad, when set, says that the caller answers offers with its
	// keypad, not with messages: given the kinds of fallback a refusal
	// would offer, it returns those its menu can take now and keeps the
	// menu for them (a Fallback words its offer with those alone).
	Keypad func(offered []string) []string
	// Answer, when set, is asked about each transcript of the caller:
	// when the utterance answers an open offer ("call me back", "a
	// person"), it returns the answer, which the call gives to its
	// Fallback as if the caller had sent it, instead of to the model. It
	// is the keypad's answer in words, with the keypad's consent and
	// bounds.
	Answer func(ctx context.Context, transcript string) (wire.ClientEvent, bool)
	// Listening, when set with Answer, reports whether the transport's
	// menu waits for an answer in words (the Fallback's Listening is
	// asked otherwise): the call's utterances then go to the answer
	// recognizer first (answer.go).
	Listening func() bool
	// Voice, when set, is given the call's Voice as the call is created,
	// before any event: the transport says lines of its own (a keypad
	// menu) through it, by the call's writer (menuaudio.go).
	Voice func(Voice)
	// Closing, when set, is called as a call refused or ended for a rule
	// ends with status, before its queue closes: the transport may still
	// take a line of its own (Voice.Keep, then Say), which the call's
	// writer says before the transport is closed (a phone's "the search
	// stopped"). It must not wait for the line.
	Closing func(status wire.CloseStatus)
}

// closeGrace bounds the close handshake of a call ended for a policy
// violation (1008): a caller flooding audio or turns need not read, and its
// call should not stay counted for the handshake's 5 s + 5 s.
const closeGrace = time.Second

// abort drops the call's connection at once (Capabilities.Abort); without
// it, the reader's and writer's context is cancelled (ioCancel), which ends
// their blocked calls.
func (c *Call) abort(ioCancel context.CancelFunc) {
	if c.caps.Abort != nil {
		c.caps.Abort()
		return
	}
	ioCancel()
}
