package wire

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

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
		return ClientEvent{}, Errorf(CodeBadJSON, "message is not a JSON object: %v", err)
	}
	if head.Type == nil {
		return ClientEvent{}, Errorf(CodeBadField, `message has no "type"`)
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
			return ClientEvent{}, Errorf(CodeUnknownType, "unknown message type")
		}
		return ClientEvent{Kind: EventOther, Type: t, Data: data}, nil
	}
}

func strict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(v); err != nil {
		return Errorf(CodeBadField, "%v", err)
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
			return ClientEvent{}, Errorf(CodeBadField, "hello.audio: %v", err)
		}
		if f.SampleRate != 0 && (f.SampleRate < 8000 || f.SampleRate > 48000) {
			return ClientEvent{}, Errorf(CodeBadField, "hello.audio.rate %d not in [8000, 48000]", f.SampleRate)
		}
		frameMS = m.Audio.FrameMS
		if frameMS != 0 && (frameMS < 20 || frameMS > MaxFrameMS || frameMS%20 != 0) {
			return ClientEvent{}, Errorf(CodeBadField, "hello.audio.frame_ms %d is not a multiple of 20 in [20, %d]", frameMS, MaxFrameMS)
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
		return ClientEvent{}, Errorf(CodeBadField, "turn.id must be 1 to %d bytes of UTF-8", MaxTurnID)
	case len(t.Text) > MaxTurnText:
		return ClientEvent{}, Errorf(CodeTooLarge, "turn.text over %d bytes", MaxTurnText)
	case t.AgeMS != nil && (*t.AgeMS < 0 || *t.AgeMS > MaxTurnAge.Milliseconds()): // compared before any conversion
		return ClientEvent{}, Errorf(CodeBadField, "turn.age_ms must be in [0, %d]", MaxTurnAge.Milliseconds())
	}
	return ClientEvent{Kind: EventTurn, Type: "turn", Turn: t}, nil
}
