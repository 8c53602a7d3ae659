// Package plivo is the wire protocol of Plivo Audio Streams in bidirectional
// mode (the <Stream bidirectional="true"> XML element), as a gateway.Codec.
//
// It follows Plivo's "Stream Event Protocol" and "Audio Streaming Protocol
// Reference" pages (plivo.com/docs/voice/audio-streaming) and the playAudio,
// checkpoint and clearAudio event pages of the Stream XML element:
//
//   - from Plivo, JSON text frames: start (start.callId, start.streamId,
//     start.accountId, start.tracks, start.mediaFormat.encoding and
//     sampleRate, and the top-level extra_headers string), media (base64
//     media.payload, media.chunk a number, media.timestamp a string), dtmf
//     (dtmf.digit), playedStream (the name of a checkpoint whose audio has
//     played) and clearedAudio (a clearAudio's acknowledgement);
//     sequenceNumber is a number;
//   - to Plivo: playAudio (media.contentType audio/x-mulaw or audio/x-l16,
//     media.sampleRate, media.payload), checkpoint (streamId, name) and
//     clearAudio (streamId).
//
// A playedStream comes back only for audio that played: Plivo's clearAudio
// drops pending checkpoints, so the capabilities say ClearEchoesMarks false
// and what was heard at a clear comes from the playback clock. Plivo has no
// hang-up message on the stream (a call is hung up through its REST API).
// A stop event is not in Plivo's documented list (the stream ends when the
// socket closes); one that arrives is decoded as a stop.
package plivo

import (
	"maps"
	"slices"
	"strings"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxMessageSize bounds one inbound message.
const MaxMessageSize = 64 << 10

const name = "plivo"

// Wire event names.
const (
	EventStart        = "start"
	EventMedia        = "media"
	EventDTMF         = "dtmf"
	EventPlayedStream = "playedStream"
	// EventPlayed is the checkpoint's answer as Plivo has also been seen
	// to spell it; read as playedStream.
	EventPlayed       = "played"
	EventClearedAudio = "clearedAudio"
	EventStop         = "stop"
	EventPlayAudio    = "playAudio"
	EventCheckpoint   = "checkpoint"
	EventClearAudio   = "clearAudio"
)

var (
	mulaw8k = media.Telephony
	formats = []media.Format{mulaw8k, gateway.L16(8000), gateway.L16(16000)}
)

// Codec is Plivo's dialect; the zero value is ready to use.
type Codec struct{}

// Name returns "plivo".
func (Codec) Name() string { return name }

// Capabilities: checkpoints, clearAudio (dropping pending checkpoints), DTMF,
// no hang-up; µ-law 8 kHz or L16 at 8 or 16 kHz.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{
		Marks: true, Clear: true, DTMF: true,
		Formats: formats, MaxMessage: MaxMessageSize,
	}
}

type wire struct {
	Event          string         `json:"event"`
	SequenceNumber gateway.Number `json:"sequenceNumber,omitempty"`
	StreamID       string         `json:"streamId,omitempty"`
	Name           string         `json:"name,omitempty"`
	Start          *wireStart     `json:"start,omitempty"`
	Media          *wireMedia     `json:"media,omitempty"`
	DTMF           *wireDTMF      `json:"dtmf,omitempty"`
	ExtraHeaders   string         `json:"extra_headers,omitempty"`
}

type wireStart struct {
	CallID      string      `json:"callId"`
	StreamID    string      `json:"streamId"`
	AccountID   string      `json:"accountId"`
	Tracks      []string    `json:"tracks,omitempty"`
	MediaFormat *wireFormat `json:"mediaFormat"`
}

type wireFormat struct {
	Encoding   string         `json:"encoding"`
	SampleRate gateway.Number `json:"sampleRate"`
}

type wireMedia struct {
	Track       string         `json:"track,omitempty"`
	Timestamp   gateway.Count  `json:"timestamp,omitempty"`
	Chunk       gateway.Number `json:"chunk,omitempty"`
	ContentType string         `json:"contentType,omitempty"`
	SampleRate  gateway.Number `json:"sampleRate,omitempty"`
	Payload     *string        `json:"payload"`
}

type wireDTMF struct {
	Track string `json:"track,omitempty"`
	Digit string `json:"digit"`
}

func decodeWire(f gateway.Frame) (*wire, error) {
	var w wire
	if err := gateway.DecodeJSONText(name, f, MaxMessageSize, &w); err != nil {
		return nil, err
	}
	if w.Event == "" {
		return nil, gateway.Missing(name, "", "event")
	}
	return &w, nil
}

// Decode parses one message from Plivo.
func (Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	w, err := decodeWire(f)
	if err != nil {
		return gateway.Event{}, err
	}
	ev := gateway.Event{Name: w.Event, Seq: int64(w.SequenceNumber)}
	switch w.Event {
	case EventStart:
		s := w.Start
		if s == nil {
			return ev, gateway.Missing(name, w.Event, "start")
		}
		if s.StreamID == "" {
			return ev, gateway.Missing(name, w.Event, "start.streamId")
		}
		if s.MediaFormat == nil {
			return ev, gateway.Missing(name, w.Event, "start.mediaFormat")
		}
		format, ok := gateway.ParseContentType(s.MediaFormat.Encoding)
		if ok && s.MediaFormat.SampleRate != 0 {
			format.SampleRate = int(s.MediaFormat.SampleRate)
		}
		if !ok || !slices.Contains(formats, format) {
			return ev, gateway.Errorf(name, w.Event, "start.mediaFormat", gateway.ErrUnsupported, "%s at %d Hz", s.MediaFormat.Encoding, s.MediaFormat.SampleRate)
		}
		ev.Kind = gateway.KindStart
		ev.Start = &gateway.Start{StreamID: s.StreamID, CallID: s.CallID, AccountID: s.AccountID, Params: parseHeaders(w.ExtraHeaders), Format: format}
	case EventMedia:
		if w.Media == nil || w.Media.Payload == nil {
			return ev, gateway.Missing(name, w.Event, "media.payload")
		}
		if _, err := gateway.ParseCount(name, w.Event, "media.timestamp", string(w.Media.Timestamp), false); err != nil {
			return ev, err
		}
		ev.Kind = gateway.KindMedia
		if ev.Audio, err = gateway.DecodeBase64(name, w.Event, "media.payload", *w.Media.Payload); err != nil {
			return ev, err
		}
	case EventDTMF:
		if w.DTMF == nil || w.DTMF.Digit == "" {
			return ev, gateway.Missing(name, w.Event, "dtmf.digit")
		}
		ev.Kind, ev.Digit = gateway.KindDTMF, w.DTMF.Digit
	case EventPlayedStream, EventPlayed:
		if w.Name == "" {
			return ev, gateway.Missing(name, w.Event, "name")
		}
		ev.Kind, ev.Mark = gateway.KindMark, w.Name
	case EventClearedAudio:
		ev.Kind, ev.Info = gateway.KindInfo, gateway.InfoCleared
	case EventStop:
		ev.Kind = gateway.KindStop
	default:
		return ev, gateway.Errorf(name, w.Event, "", gateway.ErrUnknownEvent, "%q", w.Event)
	}
	return ev, nil
}

// parseHeaders reads extra_headers, "k=v;k=v" (Plivo's start example) or
// "k=v,k=v" (the XML attribute's example).
func parseHeaders(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	for kv := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ';' || r == ',' }) {
		k, v, _ := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); k != "" {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func formatHeaders(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}

func contentType(f media.Format) string {
	if f.Encoding == media.Mulaw {
		return "audio/x-mulaw"
	}
	return "audio/x-l16"
}

// Encode renders a command to Plivo.
func (Codec) Encode(dst []byte, c gateway.Command) (gateway.Frame, error) {
	var w wire
	switch c.Kind {
	case gateway.KindAudio:
		p := gateway.EncodeBase64(c.Audio)
		w = wire{Event: EventPlayAudio, Media: &wireMedia{ContentType: contentType(c.Format), SampleRate: gateway.Number(c.Format.SampleRate), Payload: &p}}
	case gateway.KindMark:
		w = wire{Event: EventCheckpoint, StreamID: c.StreamID, Name: c.Mark}
	case gateway.KindClear:
		w = wire{Event: EventClearAudio, StreamID: c.StreamID}
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, w)}, nil
}

// EncodeEvent renders an event as Plivo sends it (for simulators).
func (Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	w := wire{SequenceNumber: gateway.Number(e.Seq)}
	switch e.Kind {
	case gateway.KindStart:
		s := e.Start
		w.Event, w.ExtraHeaders = EventStart, formatHeaders(s.Params)
		w.Start = &wireStart{CallID: s.CallID, StreamID: s.StreamID, AccountID: s.AccountID, Tracks: []string{"inbound"},
			MediaFormat: &wireFormat{Encoding: contentType(s.Format), SampleRate: gateway.Number(s.Format.SampleRate)}}
	case gateway.KindMedia:
		p := gateway.EncodeBase64(e.Audio)
		w.Event, w.Media = EventMedia, &wireMedia{Track: "inbound", Payload: &p}
	case gateway.KindDTMF:
		w.Event, w.DTMF = EventDTMF, &wireDTMF{Track: "inbound", Digit: e.Digit}
	case gateway.KindMark:
		w.Event, w.Name = EventPlayedStream, e.Mark
	case gateway.KindInfo:
		if e.Info != gateway.InfoCleared {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		w.Event = EventClearedAudio
	case gateway.KindStop:
		w.Event = EventStop
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	if e.Start != nil {
		w.StreamID = e.Start.StreamID
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, w)}, nil
}

// DecodeCommand parses a message sent to Plivo, as Plivo would.
func (Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	w, err := decodeWire(f)
	if err != nil {
		return gateway.Command{}, err
	}
	c := gateway.Command{StreamID: w.StreamID}
	switch w.Event {
	case EventPlayAudio:
		m := w.Media
		if m == nil || m.Payload == nil {
			return c, gateway.Missing(name, w.Event, "media.payload")
		}
		format, ok := gateway.ParseContentType(m.ContentType)
		if ok {
			format.SampleRate = int(m.SampleRate)
		}
		if !ok || !slices.Contains(formats, format) {
			return c, gateway.Errorf(name, w.Event, "media.contentType", gateway.ErrUnsupported, "%q at %d Hz", m.ContentType, m.SampleRate)
		}
		c.Kind, c.Format = gateway.KindAudio, format
		if c.Audio, err = gateway.DecodeBase64(name, w.Event, "media.payload", *m.Payload); err != nil {
			return c, err
		}
	case EventCheckpoint:
		if w.Name == "" {
			return c, gateway.Missing(name, w.Event, "name")
		}
		c.Kind, c.Mark = gateway.KindMark, w.Name
	case EventClearAudio:
		c.Kind = gateway.KindClear
	default:
		return c, gateway.Errorf(name, w.Event, "", gateway.ErrUnknownEvent, "%q", w.Event)
	}
	if c.Kind != gateway.KindAudio && c.StreamID == "" {
		return c, gateway.Missing(name, w.Event, "streamId")
	}
	return c, nil
}
