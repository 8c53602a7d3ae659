package twilio

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Outbound is a message frontdoor sends to the gateway: media, mark or clear.
type Outbound struct {
	Event     string // EventMedia, EventMark or EventClear
	StreamSID string
	Payload   []byte // µ-law, for media
	Mark      string // name, for mark
}

type outWire struct {
	Event     string  `json:"event"`
	StreamSid string  `json:"streamSid,omitempty"`
	StreamID  string  `json:"stream_id,omitempty"`
	Media     *wMedia `json:"media,omitempty"`
	Mark      *wMark  `json:"mark,omitempty"`
}

// EncodeOutbound renders o for dialect d: Twilio's
// {"event":"media","streamSid":…,"media":{"payload":…}},
// {"event":"mark","streamSid":…,"mark":{"name":…}} and
// {"event":"clear","streamSid":…}; Telnyx spells the stream stream_id.
func EncodeOutbound(d Dialect, o Outbound) []byte {
	n := 64 + len(o.Event) + len(o.StreamSID) + len(o.Mark) + base64.StdEncoding.EncodedLen(len(o.Payload))
	return appendOutbound(make([]byte, 0, n), d, o)
}

// appendOutbound appends EncodeOutbound's rendering of o to dst: the same
// bytes as encoding/json writes for outWire, written directly (a media
// frame is one base64 encoding and no allocation given a dst with room).
func appendOutbound(dst []byte, d Dialect, o Outbound) []byte {
	dst = append(dst, `{"event":`...)
	dst = appendString(dst, o.Event)
	if o.StreamSID != "" {
		if d == Telnyx {
			dst = append(dst, `,"stream_id":`...)
		} else {
			dst = append(dst, `,"streamSid":`...)
		}
		dst = appendString(dst, o.StreamSID)
	}
	switch o.Event {
	case EventMedia:
		dst = append(dst, `,"media":{"payload":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, o.Payload)
		dst = append(dst, `"}`...)
	case EventMark:
		dst = append(dst, `,"mark":{"name":`...)
		dst = appendString(dst, o.Mark)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it: a
// string of printable ASCII that needs no escape is copied, any other is
// left to encoding/json (HTML-safe escapes, invalid UTF-8 replaced).
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // cannot fail: a string
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// DecodeOutbound parses a message sent to a gateway, as the gateway would:
// strictly, with the same typed errors as Decode.
func DecodeOutbound(d Dialect, data []byte) (*Outbound, error) {
	if len(data) > MaxMessageSize {
		return nil, &DecodeError{Err: fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))}
	}
	var w outWire
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, jsonError(w.Event, err)
	}
	o := &Outbound{Event: w.Event, StreamSID: w.StreamSid}
	if d == Telnyx {
		o.StreamSID = w.StreamID
	}
	switch w.Event {
	case EventMedia:
		if w.Media == nil || w.Media.Payload == nil {
			return nil, missing(w.Event, "media.payload")
		}
		p, err := decodePayload(w.Event, *w.Media.Payload)
		if err != nil {
			return nil, err
		}
		o.Payload = p
	case EventMark:
		if w.Mark == nil || w.Mark.Name == "" {
			return nil, missing(w.Event, "mark.name")
		}
		o.Mark = w.Mark.Name
	case EventClear:
	default:
		return nil, &DecodeError{Event: w.Event, Err: fmt.Errorf("%w %q", ErrUnknownEvent, w.Event)}
	}
	if d == Twilio && o.StreamSID == "" {
		return nil, missing(w.Event, "streamSid")
	}
	return o, nil
}
