package telephony

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// line is a phone media connection as a call sees it: what every gateway
// protocol can do once its stream has started, in the stream's own audio
// format. The call-facing part of a telephony transport (phoneCall: turns,
// barge-in, the keypad menu, prompts, the refusal's hang-up) runs on a
// line and never on a protocol, so that Twilio and every dialect of
// media/gateway share it. A line's methods may be called from any
// goroutine, except read (the call's reader only).
type line interface {
	// read returns the next event of the stream. Bad input the call can
	// go on after is a *session.ProtocolError; any other error ends the
	// call (the line has already answered it with a close if it had one
	// to give).
	read(ctx context.Context) (lineEvent, error)
	// sendAudio queues audio of the named utterance in the stream's
	// format; it leaves paced in real time.
	sendAudio(utterance string, audio []byte) error
	// endUtterance queues the utterance's end behind its audio (a mark
	// where the gateway has marks).
	endUtterance(utterance string)
	// clear drops queued and, where the gateway can, buffered audio, and
	// returns what the caller heard of each unfinished utterance.
	clear(ctx context.Context) ([]gateway.Progress, error)
	// tracker follows the utterances sent and what was heard of them.
	tracker() *gateway.Tracker
	// played reports whether the utterance, ended, has played: its final
	// mark came back where the gateway has marks; without marks, audio
	// leaves in real time and has played once it has all been sent.
	played(utterance string) bool
	// buffered is the audio queued and not yet sent.
	buffered() time.Duration
	// lead is how far reply audio may run ahead of playback: pcmu.Lead,
	// more where the gateway takes longer frames (a frame leaves only
	// once it is whole).
	lead() time.Duration
	// hangup ends the stream: the gateway's hang-up command where it has
	// one, then the connection's close with status. transfer: a person
	// took the call, which must go on at the gateway (its next step
	// transfers it), so only the connection closes.
	hangup(status wire.CloseStatus, reason string, transfer bool)
}

// lineStart is what a stream's start says about the call.
type lineStart struct {
	name string // the transport's name (Capabilities.Name): "twilio", "telnyx", "plivo", ...
	// protocol prefixes the transport's log messages and its decode
	// errors ("twilio", for Telnyx's dialect as well).
	protocol string
	params   map[string]string // custom parameters: the caller's number (callerParam)
	format   media.Format      // the audio format of both directions
	// noKeys: the line cannot carry keys (a gateway without DTMF, such
	// as FreeSWITCH's socket modules). Its caller never hears a keypad
	// menu: a mid-call offer is said as words to answer by voice, and a
	// refused call hears its prompt and is hung up (there is no turn
	// after a call's refusal to hear an answer in).
	noKeys bool
	// keyWait is how long a keypad menu waits for a key once it has
	// played (the endpoint's KeyWait; 0: DefaultKeyWait).
	keyWait time.Duration
}

// lineEventKind says what a lineEvent is.
type lineEventKind int

const (
	lineMedia lineEventKind = iota + 1 // caller audio
	lineDTMF                           // a key
	lineStop                           // the gateway ended the stream
	lineMark                           // a mark came back (logged)
	lineError                          // the gateway reported an error (logged)
)

// lineEvent is one event of a stream, in terms a call acts on.
type lineEvent struct {
	kind     lineEventKind
	audio    []byte // lineMedia: valid until the next read
	digit    string // lineDTMF
	progress *gateway.Progress
	code     string // lineError
	message  string // lineError
}
