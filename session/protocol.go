package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Stage names as they appear in the protocol, metrics and /v1/stages.
const (
	StageSession   = "session"
	StageRecognize = "recognize"
	StageModel     = "model"
	StageSynthesis = "synthesis"
)

// Protocol bounds on client input.
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

// Server -> client messages. Each is JSON with a "type".

// SessionMsg reports the session stage's disposition for the call.
type SessionMsg struct {
	Type        string             `json:"type"` // "session"
	Disposition stages.Disposition `json:"disposition"`
	Session     string             `json:"session"`
	Position    int                `json:"position,omitempty"` // 1 is next; only while queued
}

// dispositionMsg reports one stage outcome of one turn.
type dispositionMsg struct {
	Type        string             `json:"type"` // "disposition"
	Stage       string             `json:"stage"`
	Turn        string             `json:"turn"`
	Generation  uint64             `json:"generation"`
	Segment     int                `json:"segment,omitempty"` // synthesis: the reply's sentence, from 1
	Disposition stages.Disposition `json:"disposition"`
	Position    int                `json:"position,omitempty"` // while queued
	Error       string             `json:"error,omitempty"`    // backend failure kind after completion
}

// textMsg carries model output as it streams.
type textMsg struct {
	Type       string `json:"type"` // "text"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Delta      string `json:"delta"`
}

// AudioStartMsg announces the binary audio frames that follow.
type AudioStartMsg struct {
	Type       string `json:"type"` // "audio_start"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Encoding   string `json:"encoding"` // pcm16 (little-endian), mulaw or alaw
	Rate       int    `json:"rate"`
}

// AudioEndMsg ends a turn's audio.
type AudioEndMsg struct {
	Type       string `json:"type"` // "audio_end"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	AudioMS    int64  `json:"audio_ms"`
	// Cut: prompt audio stopped early because the state it was spoken
	// for ended (docs/PROTOCOL.md, "Prompts follow the call's state");
	// AudioMS is what was sent.
	Cut bool `json:"cut,omitempty"`
}

// Turn outcomes beyond the stage dispositions.
const (
	// TurnFailed: a backend failed (see turnEndMsg.Error for its kind).
	TurnFailed = "failed"
)

// transcriptMsg is what the recognition stage heard in a speech turn.
type transcriptMsg struct {
	Type       string `json:"type"` // "transcript"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Text       string `json:"text"`
}

// turnEndMsg is a turn's final outcome: "completed", "cancelled", a refusal
// disposition of the stage named in Stage, or "failed".
type turnEndMsg struct {
	Type        string `json:"type"` // "turn_end"
	Turn        string `json:"turn"`
	Generation  uint64 `json:"generation"`
	Disposition string `json:"disposition"`
	Stage       string `json:"stage,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Heard is how much of an interrupted reply had been sent for playing.
type Heard struct {
	Turn    string `json:"turn"`
	AudioMS int64  `json:"audio_ms"`
	Text    string `json:"text"`
}

// InterruptedMsg follows a barge-in: the new generation, the turns it
// cancelled, and what of the interrupted reply was sent.
type InterruptedMsg struct {
	Type       string   `json:"type"` // "interrupted"
	Generation uint64   `json:"generation"`
	Cancelled  []string `json:"cancelled"`
	Heard      *Heard   `json:"heard,omitempty"`
}

// PromptMsg is a truthful sentence for the caller about a refusal or expiry.
type PromptMsg struct {
	Type   string `json:"type"` // "prompt"
	Reason string `json:"reason"`
	Stage  string `json:"stage"`
	Text   string `json:"text"`

	premise uint64 // the call's premise once queued: its audio's (Sender.SendAudio)
}

// ErrorMsg answers bad input.
type ErrorMsg struct {
	Type    string `json:"type"` // "error"
	Code    string `json:"code"`
	Message string `json:"message"`

	before audioBefore
}

// AudioBefore is closed once the audio the call had queued when the error
// was queued has been handed to the transport (see OfferMsg.AudioBefore).
func (m *ErrorMsg) AudioBefore() <-chan struct{} { return m.before.wait() }

// Client -> server.

// EventKind names a client event.
type EventKind string

// Client event kinds. EventAudio is a binary frame; EventOther is a JSON
// message of a type the session does not handle itself (offered to the
// Fallback, which may know it).
const (
	EventHello   EventKind = "hello"
	EventTurn    EventKind = "turn"
	EventBargeIn EventKind = "barge_in"
	EventHangup  EventKind = "hangup"
	EventAudio   EventKind = "audio"
	// EventSpeech is a finished utterance of caller audio, produced by a
	// transport's voice activity detection; it becomes a turn whose text
	// comes from the recognition stage.
	EventSpeech EventKind = "speech"
	EventOther  EventKind = "other"
)

// ClientEvent is one decoded message from the caller.
type ClientEvent struct {
	Kind  EventKind
	Type  string       // the JSON "type" (EventOther: the unknown type)
	Audio media.Format // EventHello: the caller's declared audio format
	Turn  TurnRequest  // EventTurn
	Data  []byte       // EventAudio: caller audio; EventOther: the raw JSON
	// FrameMS (EventHello) is the length of the reply audio frames the
	// caller asked for (hello.audio.frame_ms, checked: 0 or a multiple
	// of 20 up to MaxFrameMS); 0 is 20 ms.
	FrameMS int
	// EventSpeech: the utterance and when the caller stopped speaking
	// (the turn's Born); Turn.ID may be empty (the call numbers it).
	Speech    backend.Audio
	SpeechEnd time.Time
}

// TurnRequest is one utterance.
type TurnRequest struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	AgeMS *int64 `json:"age_ms,omitempty"`
}

// Age is the time already spent upstream. It is checked against the
// bounds before it is converted (decodeTurn), and clamped here as well:
// age_ms times 10^6 overflows int64 from 9223372036855 on, and a wrapped
// age would pass any later check.
func (t TurnRequest) Age() time.Duration {
	if t.AgeMS == nil || *t.AgeMS <= 0 {
		return 0
	}
	return time.Duration(min(*t.AgeMS, MaxTurnAge.Milliseconds())) * time.Millisecond
}

// Error codes sent in ErrorMsg.
const (
	CodeBadJSON      = "bad_json"
	CodeUnknownType  = "unknown_type"
	CodeBadField     = "bad_field"
	CodeOutOfOrder   = "out_of_order"   // e.g. hello after the first message
	CodeNotAdmitted  = "not_admitted"   // a turn before the session was admitted
	CodeTooManyTurns = "too_many_turns" // turns in flight over the per-call cap
	CodeDuplicate    = "duplicate_turn" // a turn id already used in this call
	CodeTooLarge     = "too_large"
	CodeSlowReader   = "slow_reader"
	CodeUnsupported  = "unsupported"
)

// ProtocolError is bad input from the caller. The call answers it with an
// ErrorMsg and goes on.
type ProtocolError struct {
	Code    string
	Message string
}

func (e *ProtocolError) Error() string { return "session: " + e.Code + ": " + e.Message }

func protoErr(code, format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// DecodeMessage decodes a message of the native protocol: binary audio or
// a JSON event (DecodeText).
func DecodeMessage(binary bool, data []byte) (ClientEvent, error) {
	if binary {
		return ClientEvent{Kind: EventAudio, Data: data}, nil
	}
	return DecodeText(data)
}

// DecodeText decodes one JSON text message from the caller. Bad input
// returns a *ProtocolError.
func DecodeText(data []byte) (ClientEvent, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return ClientEvent{}, protoErr(CodeBadJSON, "message is not a JSON object: %v", err)
	}
	if head.Type == nil {
		return ClientEvent{}, protoErr(CodeBadField, `message has no "type"`)
	}
	switch t := *head.Type; t {
	case "hello":
		return decodeHello(data)
	case "turn":
		return decodeTurn(data)
	case "barge_in":
		return ClientEvent{Kind: EventBargeIn, Type: t}, nil
	case "hangup":
		return ClientEvent{Kind: EventHangup, Type: t}, nil
	default:
		if t == "" || len(t) > 64 {
			return ClientEvent{}, protoErr(CodeUnknownType, "unknown message type")
		}
		return ClientEvent{Kind: EventOther, Type: t, Data: data}, nil
	}
}

func strict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(v); err != nil {
		return protoErr(CodeBadField, "%v", err)
	}
	return nil
}

func decodeHello(data []byte) (ClientEvent, error) {
	var m struct {
		Audio *struct {
			Encoding string `json:"encoding"`
			Rate     int    `json:"rate"`
			FrameMS  int    `json:"frame_ms"`
		} `json:"audio"`
	}
	if err := strict(data, &m); err != nil {
		return ClientEvent{}, err
	}
	f := media.Format{Encoding: media.PCM16, SampleRate: 0, Channels: 1}
	frameMS := 0
	if m.Audio != nil {
		if m.Audio.Encoding != "" {
			f.Encoding = media.Encoding(m.Audio.Encoding)
		}
		f.SampleRate = m.Audio.Rate
		check := f
		if check.SampleRate == 0 {
			check.SampleRate = 16000
		}
		if err := check.Validate(); err != nil {
			return ClientEvent{}, protoErr(CodeBadField, "hello.audio: %v", err)
		}
		if f.SampleRate != 0 && (f.SampleRate < 8000 || f.SampleRate > 48000) {
			return ClientEvent{}, protoErr(CodeBadField, "hello.audio.rate %d not in [8000, 48000]", f.SampleRate)
		}
		frameMS = m.Audio.FrameMS
		if frameMS != 0 && (frameMS < 20 || frameMS > MaxFrameMS || frameMS%20 != 0) {
			return ClientEvent{}, protoErr(CodeBadField, "hello.audio.frame_ms %d is not a multiple of 20 in [20, %d]", frameMS, MaxFrameMS)
		}
	}
	return ClientEvent{Kind: EventHello, Type: "hello", Audio: f, FrameMS: frameMS}, nil
}

func decodeTurn(data []byte) (ClientEvent, error) {
	var t TurnRequest
	if err := strict(data, &t); err != nil {
		return ClientEvent{}, err
	}
	switch {
	case t.ID == "" || len(t.ID) > MaxTurnID || !utf8.ValidString(t.ID):
		return ClientEvent{}, protoErr(CodeBadField, "turn.id must be 1 to %d bytes of UTF-8", MaxTurnID)
	case len(t.Text) > MaxTurnText:
		return ClientEvent{}, protoErr(CodeTooLarge, "turn.text over %d bytes", MaxTurnText)
	case t.AgeMS != nil && (*t.AgeMS < 0 || *t.AgeMS > MaxTurnAge.Milliseconds()): // compared before any conversion
		return ClientEvent{}, protoErr(CodeBadField, "turn.age_ms must be in [0, %d]", MaxTurnAge.Milliseconds())
	}
	return ClientEvent{Kind: EventTurn, Type: "turn", Turn: t}, nil
}

// OfferMsg lists the fallbacks a refused caller may take now.
type OfferMsg struct {
	Type  string        `json:"type"` // "offer"
	Kinds []prompt.Kind `json:"kinds"`

	before audioBefore
}

// AudioBefore is closed once every frame of audio the call had queued when
// the offer was queued (the prompt the offer follows) has been handed to
// the transport, or dropped, or will not be (the call's writer stopped).
// The offer itself is written ahead of queued audio (the control lane), so
// that a caller can answer while the prompt plays; a transport that
// speaks after the offer (a phone's keypad menu) waits for this before it
// puts its own audio on the line, or it would talk over the prompt. It is
// closed already for an offer queued behind no audio, and for one that
// was never queued by a call.
func (m *OfferMsg) AudioBefore() <-chan struct{} { return m.before.wait() }

// FallbackMsg answers a `callback` or `handoff` request.
type FallbackMsg struct {
	Type        string             `json:"type"` // "callback" or "handoff"
	Disposition stages.Disposition `json:"disposition"`
	// Ref is the callback's or handoff's reference (fallback's Ref), the
	// "ticket" the caller is told.
	Ref      string `json:"ticket,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Position int    `json:"position,omitempty"`

	before audioBefore
}

// AudioBefore is closed once the audio the call had queued when the
// answer was queued has been handed to the transport (see
// OfferMsg.AudioBefore): a phone speaks the outcome after it.
func (m *FallbackMsg) AudioBefore() <-chan struct{} { return m.before.wait() }

// audioBefore is the outbound queue's barrier for a control message that a
// transport may follow with audio of its own (outbound.push): a channel
// closed once the stream-lane frames queued before the message were
// handed to the transport. Nil until the message is queued.
type audioBefore struct{ ch chan struct{} }

// closedBarrier stands for "nothing to wait for".
var closedBarrier = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (b *audioBefore) wait() <-chan struct{} {
	if b.ch == nil {
		return closedBarrier // not queued by a call: nothing of the call's to wait for
	}
	return b.ch
}

// barrierOf returns msg's barrier, for the messages that have one.
func barrierOf(msg any) *audioBefore {
	switch m := msg.(type) {
	case *OfferMsg:
		return &m.before
	case *FallbackMsg:
		return &m.before
	case *ErrorMsg:
		return &m.before
	}
	return nil
}
