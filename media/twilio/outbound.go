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
	w := outWire{Event: o.Event}
	if d == Telnyx {
		w.StreamID = o.StreamSID
	} else {
		w.StreamSid = o.StreamSID
	}
	switch o.Event {
	case EventMedia:
		p := base64.StdEncoding.EncodeToString(o.Payload)
		w.Media = &wMedia{Payload: &p}
	case EventMark:
		w.Mark = &wMark{Name: o.Mark}
	}
	b, _ := json.Marshal(w) // cannot fail: strings and pointers only
	return b
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
