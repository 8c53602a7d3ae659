// Package vonage is the wire protocol of the Vonage Voice API's WebSocket
// endpoint (an NCCO connect action with an endpoint of type "websocket") as
// a gateway.Codec.
//
// It follows Vonage's "WebSockets in the Vonage Voice API" guide
// (developer.vonage.com/en/voice/voice-api/concepts/websockets) and the
// NCCO reference:
//
//   - Audio both ways is binary frames of 16-bit little-endian mono linear
//     PCM at the rate of the endpoint's content-type, audio/l16;rate=16000
//     (or rate=8000): one 20 ms frame per message, 640 bytes at 16 kHz.
//   - The first text frame is {"event":"websocket:connected",
//     "content-type":"audio/l16;rate=16000", ...} with the endpoint's custom
//     headers at its top level; they become Start.Params. Vonage sends no
//     stream id: StreamID is the "uuid" header when the NCCO sets one (as
//     Vonage's examples do), else "websocket".
//   - Keys come as {"event":"websocket:dtmf","digit":"5","duration":...}.
//     The guide names the event; the exact fields were not verifiable, so
//     the digit is also read from a nested "dtmf" object.
//   - To Vonage: {"action":"clear"} drops the buffered audio and is
//     acknowledged with websocket:cleared; {"action":"notify","payload":{…}}
//     asks for {"event":"websocket:notify","payload":{…}} once the audio
//     queued before it has played.
//
// Vonage has no mark message as such; notify is one, so the capabilities say
// Marks, with the mark's name in payload.name: what the caller heard is
// confirmed by notifies and, at a clear, estimated from the playback clock.
// What a clear does to a pending notify is not documented; the codec assumes
// it is dropped. There is no hang-up message on the socket (a call is ended
// through the Voice API's REST interface).
package vonage

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxMessageSize bounds one inbound message: Vonage's own audio frames are
// 640 bytes, its JSON events small.
const MaxMessageSize = 64 << 10

const name = "vonage"

// Wire names.
const (
	EventConnected = "websocket:connected"
	EventDTMF      = "websocket:dtmf"
	EventNotify    = "websocket:notify"
	EventCleared   = "websocket:cleared"
	ActionNotify   = "notify"
	ActionClear    = "clear"
)

var formats = []media.Format{gateway.L16(16000), gateway.L16(8000)}

// Codec is Vonage's dialect; the zero value is ready to use.
type Codec struct{}

// Name returns "vonage".
func (Codec) Name() string { return name }

// Capabilities: notify as marks (dropped by a clear), clear, DTMF, no
// hang-up; L16 at 16 or 8 kHz.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{Marks: true, Clear: true, DTMF: true, Formats: formats, MaxMessage: MaxMessageSize}
}

type event struct {
	Event    string                  `json:"event,omitempty"`
	Action   string                  `json:"action,omitempty"`
	Digit    string                  `json:"digit,omitempty"`
	Duration *int64                  `json:"duration,omitempty"`
	DTMF     *struct{ Digit string } `json:"dtmf,omitempty"`
	Payload  *notifyPayload          `json:"payload,omitempty"`
}

type notifyPayload struct {
	Name string `json:"name"`
}

func decodeText(f gateway.Frame) (*event, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return nil, err
	}
	var e event
	if err := gateway.UnmarshalJSON(name, "", f.Data, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Decode parses one message from Vonage.
func (Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Event{}, err
	}
	if f.Binary {
		if len(f.Data)%2 != 0 {
			return gateway.Event{}, gateway.Errorf(name, "audio", "", gateway.ErrPayload, "%d bytes is not whole 16-bit samples", len(f.Data))
		}
		return gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: f.Data}, nil
	}
	e, err := decodeText(f)
	if err != nil {
		return gateway.Event{}, err
	}
	ev := gateway.Event{Name: e.Event}
	switch e.Event {
	case "":
		return ev, gateway.Missing(name, "", "event")
	case EventConnected:
		s, err := parseConnected(f.Data)
		if err != nil {
			return ev, err
		}
		ev.Kind, ev.Start = gateway.KindStart, s
	case EventDTMF:
		ev.Kind, ev.Digit = gateway.KindDTMF, e.Digit
		if ev.Digit == "" && e.DTMF != nil {
			ev.Digit = e.DTMF.Digit
		}
		if ev.Digit == "" {
			return ev, gateway.Missing(name, e.Event, "digit")
		}
	case EventNotify:
		if e.Payload == nil || e.Payload.Name == "" {
			return ev, gateway.Missing(name, e.Event, "payload.name")
		}
		ev.Kind, ev.Mark = gateway.KindMark, e.Payload.Name
	case EventCleared:
		ev.Kind, ev.Info = gateway.KindInfo, gateway.InfoCleared
	default:
		return ev, gateway.Errorf(name, e.Event, "", gateway.ErrUnknownEvent, "%q", e.Event)
	}
	return ev, nil
}

func parseConnected(data []byte) (*gateway.Start, error) {
	var m map[string]json.RawMessage
	if err := gateway.UnmarshalJSON(name, EventConnected, data, &m); err != nil {
		return nil, err
	}
	var ct string
	if raw, ok := m["content-type"]; !ok {
		return nil, gateway.Missing(name, EventConnected, "content-type")
	} else if err := gateway.UnmarshalJSON(name, EventConnected, raw, &ct); err != nil {
		return nil, err
	}
	format, ok := gateway.ParseContentType(ct)
	if !ok || !slices.Contains(formats, format) {
		return nil, gateway.Errorf(name, EventConnected, "content-type", gateway.ErrUnsupported, "%q", ct)
	}
	s := &gateway.Start{StreamID: "websocket", Format: format}
	for k, raw := range m {
		if k == "event" || k == "content-type" {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			v = string(raw) // a header whose value is not a string keeps its JSON
		}
		if s.Params == nil {
			s.Params = map[string]string{}
		}
		s.Params[k] = v
	}
	if id := s.Params["uuid"]; id != "" {
		s.StreamID = id
	}
	return s, nil
}

// Encode renders a command to Vonage.
func (Codec) Encode(dst []byte, c gateway.Command) (gateway.Frame, error) {
	switch c.Kind {
	case gateway.KindAudio:
		return gateway.Frame{Binary: true, Data: append(dst, c.Audio...)}, nil
	case gateway.KindMark:
		return gateway.Frame{Data: gateway.MarshalJSON(dst, event{Action: ActionNotify, Payload: &notifyPayload{Name: c.Mark}})}, nil
	case gateway.KindClear:
		return gateway.Frame{Data: append(dst, `{"action":"clear"}`...)}, nil
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// EncodeEvent renders an event as Vonage sends it (for simulators).
func (Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	switch e.Kind {
	case gateway.KindStart:
		m := map[string]string{}
		for k, v := range e.Start.Params {
			m[k] = v
		}
		if e.Start.StreamID != "websocket" {
			m["uuid"] = e.Start.StreamID
		}
		m["event"] = EventConnected
		m["content-type"] = "audio/l16;rate=" + itoa(e.Start.Format.SampleRate)
		return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
	case gateway.KindMedia:
		return gateway.Frame{Binary: true, Data: append(dst, e.Audio...)}, nil
	case gateway.KindDTMF:
		return gateway.Frame{Data: gateway.MarshalJSON(dst, event{Event: EventDTMF, Digit: e.Digit})}, nil
	case gateway.KindMark:
		return gateway.Frame{Data: gateway.MarshalJSON(dst, event{Event: EventNotify, Payload: &notifyPayload{Name: e.Mark}})}, nil
	case gateway.KindInfo:
		if e.Info == gateway.InfoCleared {
			return gateway.Frame{Data: gateway.MarshalJSON(dst, event{Event: EventCleared})}, nil
		}
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// DecodeCommand parses a message sent to Vonage, as Vonage would: audio must
// be whole 20 ms frames.
func (Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Command{}, err
	}
	if f.Binary {
		if len(f.Data) == 0 || (len(f.Data)%320 != 0) {
			return gateway.Command{}, gateway.Errorf(name, "audio", "", gateway.ErrPayload, "%d bytes is not whole 20 ms frames", len(f.Data))
		}
		return gateway.Command{Kind: gateway.KindAudio, Audio: f.Data}, nil
	}
	e, err := decodeText(f)
	if err != nil {
		return gateway.Command{}, err
	}
	switch strings.TrimSpace(e.Action) {
	case ActionClear:
		return gateway.Command{Kind: gateway.KindClear}, nil
	case ActionNotify:
		if e.Payload == nil || e.Payload.Name == "" {
			return gateway.Command{}, gateway.Missing(name, e.Action, "payload.name")
		}
		return gateway.Command{Kind: gateway.KindMark, Mark: e.Payload.Name}, nil
	case "":
		return gateway.Command{}, gateway.Missing(name, "", "action")
	}
	return gateway.Command{}, gateway.Errorf(name, e.Action, "", gateway.ErrUnknownEvent, "action %q", e.Action)
}

func itoa(n int) string { return string(gateway.MarshalJSON(nil, n)) }
