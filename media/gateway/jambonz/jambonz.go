// Package jambonz is the WebSocket protocol of the Jambonz listen verb with
// bidirectional streaming audio (bidirectionalAudio.enabled and .streaming
// true, jambonz 0.9.0 and later) as a gateway.Codec.
//
// It follows the listen verb's page (docs.jambonz.org/verbs/verbs/listen,
// with its "Bidirectional audio" section) and the supporting article on
// bidirectional streaming audio:
//
//   - The server accepts the subprotocol "audio.jambonz.org" (Subprotocol).
//   - The first text frame is JSON with the call's attributes (callSid,
//     callId, accountSid, from, to, direction, ...) plus sampleRate and
//     mixType and the verb's metadata; it is the start. callSid is the
//     StreamID, callId the CallID; the other string attributes and the
//     metadata's string fields are Start.Params. Only mixType "mono" is
//     supported.
//   - Audio both ways is BINARY frames of 16-bit little-endian PCM at
//     sampleRate (8000, 16000, 24000, 48000 or 64000); audio back must be at
//     bidirectionalAudio.sampleRate, which the listen verb should set to the
//     same value.
//   - With passDtmf, keys arrive as {"event":"dtmf","dtmf":"5",
//     "duration":...}.
//   - Commands: {"type":"mark","data":{"name":…}}, {"type":"killAudio"},
//     {"type":"clearMarks"}, {"type":"disconnect"} (ends the listen verb:
//     the Conn's Hangup; the call goes on to the application's next verb).
//     jambonz echoes a mark as {"type":"mark","data":{"name":…,
//     "event":"playout"}} once the audio before it has played, and, on a
//     killAudio, every pending one at once with "event":"cleared": the
//     capabilities say ClearEchoesMarks. playDone (the end of a
//     non-streaming playAudio) is information.
//
// The listen page documents the verb, the metadata frame, binary audio and
// playAudio, killAudio and disconnect; the mark and clearMarks messages and
// their echoes are as jambonz's mod_audio_fork, which the listen verb runs
// on, reads and writes them (lws_glue.cpp in jambonz/freeswitch-modules:
// send_mark_event answers "playout" once played, "cleared" for every
// pending mark on a killAudio); the dtmf message's shape is as the
// bidirectional-streaming article describes it and could not be checked
// against a running jambonz.
package jambonz

import (
	"encoding/json"
	"slices"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Subprotocol is the WebSocket subprotocol jambonz asks for.
const Subprotocol = "audio.jambonz.org"

// MaxMessageSize bounds one inbound message.
const MaxMessageSize = 64 << 10

// MaxCommandSize bounds one message to jambonz (a simulator's limit; a
// non-streaming playAudio carries a whole file).
const MaxCommandSize = 4 << 20

const name = "jambonz"

// Message names.
const (
	TypeMark       = "mark"
	TypeKillAudio  = "killAudio"
	TypeClearMarks = "clearMarks"
	TypeDisconnect = "disconnect"
	TypePlayAudio  = "playAudio"
	TypePlayDone   = "playDone"
	EventDTMF      = "dtmf"
	MarkPlayout    = "playout"
	MarkCleared    = "cleared"
)

// reserved are the attributes that are fields of Start, or that name a
// message, never Start.Params.
var reserved = map[string]bool{"callSid": true, "callId": true, "accountSid": true, "from": true, "to": true,
	"mixType": true, "sampleRate": true, "metadata": true, "type": true, "event": true}

var formats = []media.Format{gateway.L16(8000), gateway.L16(16000), gateway.L16(24000), gateway.L16(48000), gateway.L16(64000)}

// Codec is the listen verb's dialect; the zero value is ready to use.
type Codec struct{}

// Name returns "jambonz".
func (Codec) Name() string { return name }

// Capabilities: marks (echoed as cleared by killAudio), killAudio, DTMF
// (with passDtmf), disconnect; L16 at the listen verb's sampleRate.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{
		Marks: true, ClearEchoesMarks: true, Clear: true, DTMF: true, Hangup: true,
		Formats: formats, MaxMessage: MaxMessageSize,
	}
}

type message struct {
	Type  string    `json:"type,omitempty"`
	Event string    `json:"event,omitempty"`
	DTMF  string    `json:"dtmf,omitempty"`
	Data  *markData `json:"data,omitempty"`
}

type markData struct {
	Name  string `json:"name"`
	Event string `json:"event,omitempty"`
}

type playData struct {
	AudioContent     *string         `json:"audioContent"`
	AudioContentType string          `json:"audioContentType"`
	SampleRate       json.RawMessage `json:"sampleRate"`
}

// Decode parses one message from jambonz.
func (Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Event{}, err
	}
	if f.Binary {
		if len(f.Data)%2 != 0 {
			return gateway.Event{}, gateway.Errorf(name, "audio", "", gateway.ErrPayload, "%d bytes is not whole samples", len(f.Data))
		}
		return gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: f.Data}, nil
	}
	var raw map[string]json.RawMessage
	if err := gateway.UnmarshalJSON(name, "", f.Data, &raw); err != nil {
		return gateway.Event{}, err
	}
	if raw == nil {
		return gateway.Event{}, gateway.Errorf(name, "", "", gateway.ErrMalformed, "not a JSON object")
	}
	_, typed := raw["type"]
	_, evented := raw["event"]
	if !typed && !evented {
		return metadata(raw)
	}
	var m message
	if err := gateway.UnmarshalJSON(name, "", f.Data, &m); err != nil {
		return gateway.Event{}, err
	}
	switch {
	case m.Type == TypeMark:
		ev := gateway.Event{Kind: gateway.KindMark, Name: TypeMark}
		if m.Data == nil || m.Data.Name == "" {
			return ev, gateway.Missing(name, TypeMark, "data.name")
		}
		ev.Mark = m.Data.Name
		return ev, nil
	case m.Type == TypePlayDone:
		return gateway.Event{Kind: gateway.KindInfo, Name: TypePlayDone}, nil
	case m.Type == "" && m.Event == EventDTMF:
		if m.DTMF == "" {
			return gateway.Event{Name: EventDTMF}, gateway.Missing(name, EventDTMF, "dtmf")
		}
		return gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMF, Digit: m.DTMF}, nil
	}
	n := m.Type
	if n == "" {
		n = m.Event
	}
	return gateway.Event{Name: n}, gateway.Errorf(name, n, "", gateway.ErrUnknownEvent, "%q", n)
}

// metadata reads the first text frame.
func metadata(raw map[string]json.RawMessage) (gateway.Event, error) {
	ev := gateway.Event{Name: "metadata"}
	var attrs struct {
		CallSid    string          `json:"callSid"`
		CallID     string          `json:"callId"`
		AccountSid string          `json:"accountSid"`
		From       string          `json:"from"`
		To         string          `json:"to"`
		SampleRate int             `json:"sampleRate"`
		MixType    string          `json:"mixType"`
		Metadata   json.RawMessage `json:"metadata"`
	}
	b, _ := json.Marshal(raw)
	if err := gateway.UnmarshalJSON(name, ev.Name, b, &attrs); err != nil {
		return ev, err
	}
	if attrs.CallSid == "" {
		return ev, gateway.Missing(name, ev.Name, "callSid")
	}
	if attrs.SampleRate == 0 {
		return ev, gateway.Missing(name, ev.Name, "sampleRate")
	}
	format := gateway.L16(attrs.SampleRate)
	if !slices.Contains(formats, format) {
		return ev, gateway.Errorf(name, ev.Name, "sampleRate", gateway.ErrUnsupported, "%d Hz", attrs.SampleRate)
	}
	if attrs.MixType != "" && attrs.MixType != "mono" {
		return ev, gateway.Errorf(name, ev.Name, "mixType", gateway.ErrUnsupported, "%q", attrs.MixType)
	}
	s := &gateway.Start{StreamID: attrs.CallSid, CallID: attrs.CallID, AccountID: attrs.AccountSid, From: attrs.From, To: attrs.To, Format: format}
	params := map[string]string{}
	addStrings(params, raw)
	if len(attrs.Metadata) > 0 {
		var md map[string]json.RawMessage
		if json.Unmarshal(attrs.Metadata, &md) == nil {
			addStrings(params, md)
		}
	}
	for k := range reserved {
		delete(params, k)
	}
	if len(params) > 0 {
		s.Params = params
	}
	ev.Kind, ev.Start = gateway.KindStart, s
	return ev, nil
}

func addStrings(dst map[string]string, m map[string]json.RawMessage) {
	for k, raw := range m {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			dst[k] = v
		}
	}
}

// Encode renders a command to jambonz: binary audio or a JSON command.
func (Codec) Encode(dst []byte, c gateway.Command) (gateway.Frame, error) {
	var m message
	switch c.Kind {
	case gateway.KindAudio:
		return gateway.Frame{Binary: true, Data: append(dst, c.Audio...)}, nil
	case gateway.KindMark:
		m = message{Type: TypeMark, Data: &markData{Name: c.Mark}}
	case gateway.KindClear:
		m = message{Type: TypeKillAudio}
	case gateway.KindHangup:
		m = message{Type: TypeDisconnect}
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
}

// EncodeEvent renders an event as jambonz sends it (for simulators).
func (Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	switch e.Kind {
	case gateway.KindStart:
		s := e.Start
		m := map[string]any{"callSid": s.StreamID, "sampleRate": s.Format.SampleRate, "mixType": "mono"}
		for k, v := range map[string]string{"callId": s.CallID, "accountSid": s.AccountID, "from": s.From, "to": s.To} {
			if v != "" {
				m[k] = v
			}
		}
		for k, v := range s.Params {
			if !reserved[k] {
				m[k] = v
			}
		}
		return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
	case gateway.KindMedia:
		return gateway.Frame{Binary: true, Data: append(dst, e.Audio...)}, nil
	case gateway.KindDTMF:
		return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Event: EventDTMF, DTMF: e.Digit})}, nil
	case gateway.KindMark:
		return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Type: TypeMark, Data: &markData{Name: e.Mark, Event: MarkPlayout}})}, nil
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// DecodeCommand parses a message sent to jambonz, as jambonz would. A
// clearMarks decodes as KindNone; a non-streaming playAudio of raw audio as
// KindAudio.
func (Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	if err := gateway.CheckSize(name, f, MaxCommandSize); err != nil {
		return gateway.Command{}, err
	}
	if f.Binary {
		return gateway.Command{Kind: gateway.KindAudio, Audio: f.Data}, nil
	}
	var m struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := gateway.UnmarshalJSON(name, "", f.Data, &m); err != nil {
		return gateway.Command{}, err
	}
	switch m.Type {
	case TypeMark:
		var d markData
		if len(m.Data) == 0 || gateway.UnmarshalJSON(name, m.Type, m.Data, &d) != nil || d.Name == "" {
			return gateway.Command{}, gateway.Missing(name, m.Type, "data.name")
		}
		return gateway.Command{Kind: gateway.KindMark, Mark: d.Name}, nil
	case TypeKillAudio:
		return gateway.Command{Kind: gateway.KindClear}, nil
	case TypeDisconnect:
		return gateway.Command{Kind: gateway.KindHangup}, nil
	case TypeClearMarks:
		return gateway.Command{Kind: gateway.KindNone}, nil
	case TypePlayAudio:
		var d playData
		if len(m.Data) == 0 {
			return gateway.Command{}, gateway.Missing(name, m.Type, "data")
		}
		if err := gateway.UnmarshalJSON(name, m.Type, m.Data, &d); err != nil {
			return gateway.Command{}, err
		}
		if d.AudioContent == nil {
			return gateway.Command{}, gateway.Missing(name, m.Type, "data.audioContent")
		}
		if d.AudioContentType != "raw" {
			return gateway.Command{}, gateway.Errorf(name, m.Type, "data.audioContentType", gateway.ErrUnsupported, "%q", d.AudioContentType)
		}
		a, err := gateway.DecodeBase64(name, m.Type, "data.audioContent", *d.AudioContent)
		return gateway.Command{Kind: gateway.KindAudio, Audio: a}, err
	case "":
		return gateway.Command{}, gateway.Missing(name, "", "type")
	}
	return gateway.Command{}, gateway.Errorf(name, m.Type, "", gateway.ErrUnknownEvent, "%q", m.Type)
}
