package twilio

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxMessageSize bounds one inbound JSON message. Twilio's media chunks are
// far smaller (20 ms of µ-law is 216 bytes of base64), so anything near the
// bound is a broken or hostile peer.
const MaxMessageSize = 64 << 10

// Event names on the wire.
const (
	EventConnected = "connected"
	EventStart     = "start"
	EventMedia     = "media"
	EventDTMF      = "dtmf"
	EventMark      = "mark"
	EventStop      = "stop"
	EventClear     = "clear" // outbound only
	EventError     = "error" // Telnyx only, inbound
)

// Sentinel errors a caller can branch on with errors.Is. They are the
// gateway package's, so errors.Is holds across every dialect.
var (
	ErrTooLarge     = gateway.ErrTooLarge
	ErrUnknownEvent = gateway.ErrUnknownEvent
	ErrMalformed    = gateway.ErrMalformed
	ErrPayload      = gateway.ErrPayload
)

// DecodeError says which event and field of a message was bad.
type DecodeError struct {
	Event string // "" when the event itself could not be read
	Field string // JSON path of the offending field, if known
	Err   error  // one of the sentinel errors, possibly wrapping a cause
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("twilio: ")
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

// Dialect is the JSON spelling a gateway uses.
type Dialect int

// Dialects.
const (
	Twilio Dialect = iota // camelCase: streamSid, sequenceNumber, mediaFormat
	Telnyx                // snake_case: stream_id, sequence_number, media_format
)

func (d Dialect) String() string {
	if d == Telnyx {
		return "telnyx"
	}
	return "twilio"
}

// Message is one message from the gateway. Exactly one of the pointer fields
// matching Event is set.
type Message struct {
	Event          string
	SequenceNumber int64  // 0 when absent (connected)
	StreamSID      string // Telnyx: stream_id
	Connected      *Connected
	Start          *Start
	Media          *Media
	DTMF           *DTMF
	Mark           *Mark
	Stop           *Stop
	Error          *GatewayError
}

// Connected is the first message of a stream.
type Connected struct {
	Protocol string // "Call"
	Version  string // "1.0.0"
}

// Start describes the stream; it arrives once, after connected.
type Start struct {
	StreamSID        string
	AccountSID       string // Telnyx: user_id
	CallSID          string // Telnyx: call_control_id
	Tracks           []string
	CustomParameters map[string]string
	MediaFormat      MediaFormat
}

// MediaFormat is the audio format of media payloads.
type MediaFormat struct {
	Encoding   string // "audio/x-mulaw" (Twilio) or "PCMU" (Telnyx)
	SampleRate int
	Channels   int
}

// IsMulaw8k reports whether the format is the 8 kHz mono µ-law frontdoor speaks.
func (f MediaFormat) IsMulaw8k() bool {
	enc := strings.ToLower(f.Encoding)
	return (enc == "audio/x-mulaw" || enc == "pcmu") && f.SampleRate == 8000 && (f.Channels == 1 || f.Channels == 0)
}

// Media is a chunk of caller audio. Its size is not fixed.
type Media struct {
	Track     string        // "inbound" or "outbound"
	Chunk     int64         // 1-based chunk counter
	Timestamp time.Duration // from the start of the stream, millisecond resolution
	Payload   []byte        // µ-law bytes, base64-decoded
}

// DTMF is a keypress on the caller's line.
type DTMF struct {
	Track string // "inbound_track"
	Digit string
}

// Mark is the echo of a mark frontdoor sent.
type Mark struct {
	Name string
}

// Stop ends the stream.
type Stop struct {
	AccountSID string
	CallSID    string
}

// GatewayError is Telnyx's error event.
type GatewayError struct {
	Code   int
	Title  string
	Detail string
}

func decodePayload(event, s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, &DecodeError{Event: event, Field: "media.payload", Err: fmt.Errorf("%w: %v", ErrPayload, err)}
	}
	return b, nil
}

// parseCount parses one of the protocol's numbers-sent-as-strings.
func parseCount(event, field, s string, required bool) (int64, error) {
	if s == "" {
		if required {
			return 0, &DecodeError{Event: event, Field: field, Err: fmt.Errorf("%w: missing", ErrMalformed)}
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, &DecodeError{Event: event, Field: field, Err: fmt.Errorf("%w: %q is not a count", ErrMalformed, s)}
	}
	return n, nil
}

func missing(event, field string) error {
	return &DecodeError{Event: event, Field: field, Err: fmt.Errorf("%w: missing", ErrMalformed)}
}
