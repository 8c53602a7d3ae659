package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
)

// Frame is one message on a Link: a WebSocket text or binary message, or one
// frame of a framed TCP stream (AudioSocket, where Binary is always true).
type Frame struct {
	Binary bool
	Data   []byte
}

// Kind says what an Event or a Command is.
type Kind int

// Event kinds (from the gateway) and command kinds (to the gateway).
const (
	KindNone   Kind = iota
	KindStart       // the stream's identifiers, metadata and audio format
	KindMedia       // caller audio in the stream's format
	KindDTMF        // a key the caller pressed
	KindMark        // a mark (checkpoint, notify) echoed back; to the gateway: a mark to place
	KindStop        // the gateway ends the stream
	KindError       // the gateway reports an error
	KindInfo        // anything else the dialect defines (connected, flow control, a clear's ack): logged, no action
	KindAudio       // to the gateway: audio to play
	KindClear       // to the gateway: drop buffered audio (barge-in)
	KindHangup      // to the gateway: end the call
)

var kindNames = [...]string{"none", "start", "media", "dtmf", "mark", "stop", "error", "info", "audio", "clear", "hangup"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Start describes a stream. Which fields a dialect fills is said in its
// package documentation; StreamID is always set (the dialect's stream, call
// or connection id, whichever identifies the socket).
type Start struct {
	StreamID  string
	CallID    string
	AccountID string
	From, To  string            // caller and called numbers where the dialect sends them
	Params    map[string]string // custom parameters, headers, metadata or channel variables
	Format    media.Format      // the audio format of media both ways
}

// Event is one decoded message from a gateway. Audio, when set, aliases the
// decoder's input or a fresh buffer: copy it to keep it past the next Read.
type Event struct {
	Kind     Kind
	Name     string // the dialect's own name for the message ("media", "MEDIA_START", "websocket:notify")
	Info     string // for KindInfo: InfoConnected, InfoCleared, InfoFlow or "" for anything else
	Seq      int64  // sequence number where the dialect has one
	Start    *Start
	Audio    []byte
	Digit    string
	Mark     string
	Err      *GatewayError
	Progress *Progress // set by Conn.Read on the echo of a mark it sent
}

// What a KindInfo event is, where a dialect has it.
const (
	InfoConnected = "connected" // the socket is open, start follows (Twilio-like dialects)
	InfoCleared   = "cleared"   // the gateway acknowledges a clear (Plivo clearedAudio, Vonage websocket:cleared)
	InfoFlow      = "flow"      // flow control or status (Asterisk MEDIA_XOFF, MEDIA_XON, STATUS)
)

// GatewayError is an error the gateway reports on the stream.
type GatewayError struct {
	Code    string
	Message string
}

// Command is one message to a gateway.
type Command struct {
	Kind     Kind // KindAudio, KindMark, KindClear or KindHangup
	StreamID string
	Format   media.Format // of Audio
	Audio    []byte
	Mark     string
}

// Capabilities is what a dialect can do; the Conn consults it instead of
// the dialect's name.
type Capabilities struct {
	// Marks: the gateway echoes a mark once the audio sent before it has
	// played, so an echo confirms playback.
	Marks bool
	// ClearEchoesMarks: a clear makes the gateway echo every pending mark at
	// once (Twilio's semantics). When false, pending marks are dropped by a
	// clear and never come back.
	ClearEchoesMarks bool
	// Clear: the gateway has a command that drops its buffered audio. Without
	// one, the Conn's clear drops only its own queue, which is all there is
	// when frames leave in real time.
	Clear bool
	// DTMF: the gateway reports keys pressed.
	DTMF bool
	// Hangup: the gateway takes a command that ends the call.
	Hangup bool
	// Formats lists the audio formats the dialect can carry; the stream's own
	// is in its Start.
	Formats []media.Format
	// FrameDuration is the audio in one outbound message; default 20 ms.
	FrameDuration time.Duration
	// MinMessageBytes and MessageMultiple, when set, are what the
	// gateway's page asks of one outbound audio message's payload (Exotel:
	// at least 3.2 KB, in multiples of 320 bytes): the stream's message
	// is then the shortest whole number of 20 ms frames, FrameDuration or
	// more, that meets both in the stream's format (Conn.FrameDuration).
	MinMessageBytes int
	MessageMultiple int
	// MaxMessage bounds one inbound message in bytes.
	MaxMessage int
	// ImplicitStart: the gateway may send audio without a start first
	// (FreeSWITCH's modules send their metadata only when given one). The
	// Conn then starts the stream itself on the first audio, with
	// ImplicitStreamID and the first of Formats, and no parameters.
	ImplicitStart bool
}

// ImplicitStreamID names a stream the Conn started itself (ImplicitStart).
const ImplicitStreamID = "implicit"

// MessageDuration is the audio in one outbound message of format f: the
// shortest whole number of 20 ms frames, at least FrameDuration (default
// 20 ms), whose payload is at least MinMessageBytes and a multiple of
// MessageMultiple. It gives up after one second of audio, a message no
// gateway asks for.
func (c Capabilities) MessageDuration(f media.Format) time.Duration {
	d := max(c.FrameDuration, media.FrameDuration)
	d = (d + media.FrameDuration - 1) / media.FrameDuration * media.FrameDuration
	for ; d < time.Second; d += media.FrameDuration {
		n := f.BytesPer(d)
		if n >= c.MinMessageBytes && (c.MessageMultiple <= 0 || n%c.MessageMultiple == 0) {
			return d
		}
	}
	return d
}

// Codec is one dialect's wire format. The server side decodes what the
// gateway sends (Decode) and encodes commands to it (Encode); the gateway
// side, for simulators and load generators, does the reverse (EncodeEvent,
// DecodeCommand). EncodeEvent finds the stream's identifiers in e.Start for
// every kind of event, since most dialects repeat them, and returns
// ErrUnsupported for what the dialect cannot say. Encoders append to dst and return the frame, so a caller
// that passes the previous frame's Data[:0] reuses its buffer. Decoders never
// panic: bad input yields a *DecodeError. A Codec is safe for concurrent use.
type Codec interface {
	Name() string
	Capabilities() Capabilities
	Decode(f Frame) (Event, error)
	Encode(dst []byte, c Command) (Frame, error)
	EncodeEvent(dst []byte, e Event) (Frame, error)
	DecodeCommand(f Frame) (Command, error)
}

// Sentinel errors a caller can branch on with errors.Is; a *DecodeError wraps
// one of the first five.
var (
	ErrTooLarge     = errors.New("message too large")
	ErrUnknownEvent = errors.New("unknown event")
	ErrMalformed    = errors.New("malformed message")
	ErrPayload      = errors.New("bad media payload")
	ErrOrder        = errors.New("message out of order")
	ErrUnsupported  = errors.New("not supported by this dialect")
	ErrNotStarted   = errors.New("gateway: stream not started")
)

// DecodeError says which dialect, event and field of a message was bad.
type DecodeError struct {
	Dialect string
	Event   string // "" when the event itself could not be read
	Field   string // path of the offending field, if known
	Err     error  // one of the sentinel errors, possibly wrapping a cause
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.Dialect)
	b.WriteString(": ")
	if e.Event != "" {
		fmt.Fprintf(&b, "%s: ", e.Event)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Errorf returns a *DecodeError wrapping sentinel with a formatted detail.
func Errorf(dialect, event, field string, sentinel error, format string, args ...any) *DecodeError {
	err := sentinel
	if format != "" {
		err = fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
	}
	return &DecodeError{Dialect: dialect, Event: event, Field: field, Err: err}
}

// Missing returns the *DecodeError for a required field that is absent.
func Missing(dialect, event, field string) *DecodeError {
	return Errorf(dialect, event, field, ErrMalformed, "missing")
}

// CheckSize returns a *DecodeError when f is over max bytes.
func CheckSize(dialect string, f Frame, max int) error {
	if len(f.Data) > max {
		return Errorf(dialect, "", "", ErrTooLarge, "%d bytes, at most %d", len(f.Data), max)
	}
	return nil
}
