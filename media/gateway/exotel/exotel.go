// Package exotel is the wire protocol of Exotel's bidirectional voice
// streaming (the Voicebot applet, AgentStream) as a gateway.Codec.
//
// It follows Exotel's "WebSocket protocol" page of the AgentStream developer
// documentation (developer.exotel.com/docs/agentstream) and the Voicebot
// applet guide: JSON text frames, snake_case names, numbers sent as strings
// (read as strings or numbers, since Exotel's own clients send both).
//
//   - From Exotel: connected; start (stream_sid, start.call_sid,
//     start.account_sid, start.from, start.to, start.custom_parameters, and
//     start.media_format with encoding, sample_rate and bit_rate); media
//     (base64 media.payload, media.chunk, media.timestamp); dtmf (dtmf.digit,
//     dtmf.duration); mark (mark.name, once the audio before it has played);
//     stop (stop.reason).
//   - To Exotel: media (media.payload), mark (mark.name) and clear, each with
//     stream_sid.
//
// Audio is 16-bit little-endian mono PCM ("raw/slin") at the sample rate the
// applet was configured with, by the stream URL's sample-rate parameter:
// 8000 (the default), 16000 or 24000 Hz. Exotel asks for outbound chunks
// of at least 3.2 KB (and 100 ms) in multiples of 320 bytes, so the
// capabilities say so (MinMessageBytes, MessageMultiple): 200 ms messages
// at 8 kHz, 100 ms at 16 and 24 kHz. Exotel does not document what a
// clear does to pending marks; the codec assumes Twilio's behaviour (they
// come back at once), which its protocol follows everywhere else. There is
// no hang-up message (the call moves on to the next applet when the socket
// closes).
package exotel

import (
	"fmt"
	"strconv"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxMessageSize bounds one inbound message: Exotel's own chunks are about
// 100 ms, far below it.
const MaxMessageSize = 256 << 10

const name = "exotel"

// Wire event names.
const (
	EventConnected = "connected"
	EventStart     = "start"
	EventMedia     = "media"
	EventDTMF      = "dtmf"
	EventMark      = "mark"
	EventStop      = "stop"
	EventClear     = "clear"
)

var formats = []media.Format{gateway.L16(8000), gateway.L16(16000), gateway.L16(24000)}

// Codec is Exotel's dialect; the zero value is ready to use.
type Codec struct {
	// SampleRate is the rate the stream URL asks for (Exotel's
	// ?sample-rate=8000|16000|24000, the way its Voicebot applet is told
	// the rate); 0 when the URL names none. When set it is the stream's
	// rate, whatever the start's media_format says; otherwise the
	// start's, or 8000 when the start has none.
	SampleRate int
}

// Name returns "exotel".
func (Codec) Name() string { return name }

// Capabilities: marks (echoed on clear), clear, DTMF, no hang-up; L16 at 8,
// 16 or 24 kHz in messages of at least 3.2 KB and 100 ms, in multiples of
// 320 bytes (200 ms at 8 kHz, 100 ms at 16 and 24 kHz), as Exotel's page
// asks.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{
		Marks: true, ClearEchoesMarks: true, Clear: true, DTMF: true,
		Formats: formats, FrameDuration: 100 * time.Millisecond, MinMessageBytes: MinChunk, MessageMultiple: ChunkMultiple,
		MaxMessage: MaxMessageSize,
	}
}

// What Exotel's page asks of an outbound media payload.
const (
	MinChunk      = 3200
	ChunkMultiple = 320
)

// ParseSampleRate reads a stream URL's sample-rate parameter ("" is 0: none).
func ParseSampleRate(s string) (int, error) {
	switch s {
	case "":
		return 0, nil
	case "8000", "16000", "24000":
		n, _ := strconv.Atoi(s)
		return n, nil
	}
	return 0, fmt.Errorf("exotel: sample-rate %q, want 8000, 16000 or 24000", s)
}

type wire struct {
	Event          string        `json:"event"`
	SequenceNumber gateway.Count `json:"sequence_number,omitempty"`
	StreamSID      string        `json:"stream_sid,omitempty"`
	Start          *wireStart    `json:"start,omitempty"`
	Media          *wireMedia    `json:"media,omitempty"`
	DTMF           *wireDTMF     `json:"dtmf,omitempty"`
	Mark           *wireMark     `json:"mark,omitempty"`
	Stop           *wireStop     `json:"stop,omitempty"`
}

type wireStart struct {
	StreamSID        string            `json:"stream_sid"`
	CallSID          string            `json:"call_sid"`
	AccountSID       string            `json:"account_sid"`
	From             string            `json:"from,omitempty"`
	To               string            `json:"to,omitempty"`
	CustomParameters map[string]string `json:"custom_parameters,omitempty"`
	MediaFormat      *wireFormat       `json:"media_format"`
}

type wireFormat struct {
	Encoding   string        `json:"encoding"`
	SampleRate gateway.Count `json:"sample_rate"`
	BitRate    gateway.Count `json:"bit_rate"`
}

type wireMedia struct {
	Chunk     gateway.Count `json:"chunk,omitempty"`
	Timestamp gateway.Count `json:"timestamp,omitempty"`
	Payload   *string       `json:"payload"`
}

type wireDTMF struct {
	Digit    gateway.Count `json:"digit"`
	Duration gateway.Count `json:"duration,omitempty"`
}

type wireMark struct {
	Name string `json:"name"`
}

type wireStop struct {
	CallSID    string `json:"call_sid,omitempty"`
	AccountSID string `json:"account_sid,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

func decodeWire(f gateway.Frame) (*wire, int64, error) {
	var w wire
	if err := gateway.DecodeJSONText(name, f, MaxMessageSize, &w); err != nil {
		return nil, 0, err
	}
	if w.Event == "" {
		return nil, 0, gateway.Missing(name, "", "event")
	}
	seq, err := gateway.ParseCount(name, w.Event, "sequence_number", string(w.SequenceNumber), false)
	return &w, seq, err
}

// Decode parses one message from Exotel.
func (c Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	w, seq, err := decodeWire(f)
	if err != nil {
		return gateway.Event{}, err
	}
	ev := gateway.Event{Name: w.Event, Seq: seq}
	switch w.Event {
	case EventConnected:
		ev.Kind, ev.Info = gateway.KindInfo, gateway.InfoConnected
	case EventStart:
		s := w.Start
		if s == nil {
			return ev, gateway.Missing(name, w.Event, "start")
		}
		id := s.StreamSID
		if id == "" {
			id = w.StreamSID
		}
		if id == "" {
			return ev, gateway.Missing(name, w.Event, "start.stream_sid")
		}
		format, err := c.parseFormat(s.MediaFormat)
		if err != nil {
			return ev, err
		}
		ev.Kind = gateway.KindStart
		ev.Start = &gateway.Start{StreamID: id, CallID: s.CallSID, AccountID: s.AccountSID, From: s.From, To: s.To, Params: s.CustomParameters, Format: format}
	case EventMedia:
		if w.Media == nil || w.Media.Payload == nil {
			return ev, gateway.Missing(name, w.Event, "media.payload")
		}
		for field, v := range map[string]gateway.Count{"media.chunk": w.Media.Chunk, "media.timestamp": w.Media.Timestamp} {
			if _, err := gateway.ParseCount(name, w.Event, field, string(v), false); err != nil {
				return ev, err
			}
		}
		ev.Kind = gateway.KindMedia
		if ev.Audio, err = gateway.DecodeBase64(name, w.Event, "media.payload", *w.Media.Payload); err != nil {
			return ev, err
		}
	case EventDTMF:
		if w.DTMF == nil || w.DTMF.Digit == "" {
			return ev, gateway.Missing(name, w.Event, "dtmf.digit")
		}
		ev.Kind, ev.Digit = gateway.KindDTMF, string(w.DTMF.Digit)
	case EventMark:
		if w.Mark == nil || w.Mark.Name == "" {
			return ev, gateway.Missing(name, w.Event, "mark.name")
		}
		ev.Kind, ev.Mark = gateway.KindMark, w.Mark.Name
	case EventStop:
		ev.Kind = gateway.KindStop
	default:
		return ev, gateway.Errorf(name, w.Event, "", gateway.ErrUnknownEvent, "%q", w.Event)
	}
	return ev, nil
}

func (c Codec) parseFormat(f *wireFormat) (media.Format, error) {
	if f == nil {
		f = &wireFormat{}
	}
	rate, err := gateway.ParseCount(name, EventStart, "start.media_format.sample_rate", string(f.SampleRate), false)
	if err != nil {
		return media.Format{}, err
	}
	switch {
	case c.SampleRate != 0:
		rate = int64(c.SampleRate)
	case rate == 0:
		rate = 8000
	}
	if f.BitRate != "" && f.BitRate != "16" {
		return media.Format{}, gateway.Errorf(name, EventStart, "start.media_format.bit_rate", gateway.ErrUnsupported, "%q", f.BitRate)
	}
	for _, ok := range formats {
		if int64(ok.SampleRate) == rate {
			return ok, nil
		}
	}
	return media.Format{}, gateway.Errorf(name, EventStart, "start.media_format.sample_rate", gateway.ErrUnsupported, "%d Hz", rate)
}

// Encode renders a command to Exotel.
func (Codec) Encode(dst []byte, c gateway.Command) (gateway.Frame, error) {
	w := wire{StreamSID: c.StreamID}
	switch c.Kind {
	case gateway.KindAudio:
		p := gateway.EncodeBase64(c.Audio)
		w.Event, w.Media = EventMedia, &wireMedia{Payload: &p}
	case gateway.KindMark:
		w.Event, w.Mark = EventMark, &wireMark{Name: c.Mark}
	case gateway.KindClear:
		w.Event = EventClear
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, w)}, nil
}

// EncodeEvent renders an event as Exotel sends it (for simulators).
func (Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	w := wire{SequenceNumber: gateway.Count(gateway.FormatCount(e.Seq))}
	if e.Start != nil {
		w.StreamSID = e.Start.StreamID
	}
	switch e.Kind {
	case gateway.KindInfo:
		if e.Info != gateway.InfoConnected {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		w = wire{Event: EventConnected}
	case gateway.KindStart:
		s := e.Start
		w.Event = EventStart
		w.Start = &wireStart{StreamSID: s.StreamID, CallSID: s.CallID, AccountSID: s.AccountID, From: s.From, To: s.To, CustomParameters: s.Params,
			MediaFormat: &wireFormat{Encoding: "audio/x-raw", SampleRate: gateway.Count(strconv.Itoa(s.Format.SampleRate)), BitRate: "16"}}
	case gateway.KindMedia:
		p := gateway.EncodeBase64(e.Audio)
		w.Event, w.Media = EventMedia, &wireMedia{Payload: &p}
	case gateway.KindDTMF:
		w.Event, w.DTMF = EventDTMF, &wireDTMF{Digit: gateway.Count(e.Digit)}
	case gateway.KindMark:
		w.Event, w.Mark = EventMark, &wireMark{Name: e.Mark}
	case gateway.KindStop:
		w.Event, w.Stop = EventStop, &wireStop{Reason: "callended"}
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, w)}, nil
}

// DecodeCommand parses a message sent to Exotel, as Exotel would.
func (Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	w, _, err := decodeWire(f)
	if err != nil {
		return gateway.Command{}, err
	}
	c := gateway.Command{StreamID: w.StreamSID}
	switch w.Event {
	case EventMedia:
		if w.Media == nil || w.Media.Payload == nil {
			return c, gateway.Missing(name, w.Event, "media.payload")
		}
		c.Kind = gateway.KindAudio
		if c.Audio, err = gateway.DecodeBase64(name, w.Event, "media.payload", *w.Media.Payload); err != nil {
			return c, err
		}
		if len(c.Audio)%ChunkMultiple != 0 || len(c.Audio) < MinChunk {
			return c, gateway.Errorf(name, w.Event, "media.payload", gateway.ErrPayload, "%d bytes, not a multiple of %d of at least %d", len(c.Audio), ChunkMultiple, MinChunk)
		}
	case EventMark:
		if w.Mark == nil || w.Mark.Name == "" {
			return c, gateway.Missing(name, w.Event, "mark.name")
		}
		c.Kind, c.Mark = gateway.KindMark, w.Mark.Name
	case EventClear:
		c.Kind = gateway.KindClear
	default:
		return c, gateway.Errorf(name, w.Event, "", gateway.ErrUnknownEvent, "%q", w.Event)
	}
	if c.StreamID == "" {
		return c, gateway.Missing(name, w.Event, "stream_sid")
	}
	return c, nil
}
