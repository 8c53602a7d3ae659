// Package freeswitch is the WebSocket protocol of FreeSWITCH's media
// modules as a gateway.Codec: mod_audio_fork as jambonz builds it
// (github.com/jambonz/freeswitch-modules, Fork set), which plays the audio
// it is sent, and mod_audio_stream (github.com/amigniter/mod_audio_stream),
// which does not.
//
// mod_audio_fork, from its source (mod_audio_fork.c and lws_glue.cpp of
// jambonz/freeswitch-modules, the module jambonz's own listen verb runs
// on): the API command "uuid_audio_fork <uuid> start <ws-url> mono 8k|16k
// <bugname> <metadata> 1 1 <rate>" (bidirectional audio enabled and
// streamed, at rate) connects offering the subprotocol
// "audio.drachtio.org" (Subprotocol; MOD_AUDIO_FORK_SUBPROTOCOL_NAME
// changes it), with HTTP Basic authentication from the channel variables
// MOD_AUDIO_BASIC_AUTH_USERNAME and _PASSWORD. It sends the metadata as
// its first text frame, then the caller's audio as BINARY L16 frames, and
// plays every BINARY frame it receives (L16 at <rate>, resampled to the
// channel's) by mixing it into what the caller hears. Text frames it
// takes: {"type":"mark","data":{"name":…}} (echoed as
// {"type":"mark","data":{"name":…,"event":"playout"}} once the audio
// before it has played), killAudio (empties the streamed buffer and
// echoes every pending mark with "event":"cleared"), clearMarks, and
// disconnect (fires the FreeSWITCH event mod_audio_fork::disconnect and
// nothing more: the Conn's Hangup, which an event socket listener turns
// into uuid_kill; docs/TELEPHONY.md). No DTMF on the socket. Builds of the
// module older than its marks never echo one; use a current one.
//
// mod_audio_stream, from its README: the API command
// "uuid_audio_stream <uuid> start <wss-url> <mix-type> <sampling-rate>
// <metadata>" opens the socket and
//
//   - sends the optional metadata, any UTF-8 text, as the first (text)
//     message; the Codec decodes it as the start: a JSON object's string
//     fields become Start.Params (its "uuid", if any, the StreamID), other
//     text is Params["metadata"]. Without metadata the first message is
//     audio, and the Conn starts the stream itself (ImplicitStart) with no
//     parameters: no caller number, no token but the upgrade's;
//   - then streams the channel's audio as BINARY frames of 16-bit
//     little-endian linear PCM (L16) at the sampling rate of the command,
//     8k or 16k, which the socket does not announce: the Codec is told
//     (SampleRate). Only the "mono" mix type is supported.
//   - Audio back is the module's documented play response, a text frame
//     {"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":8000,
//     "audioData":"<base64>"}}; with Binary set, the Codec sends raw binary
//     frames instead, which the bidirectional release (1.0.3) plays as a
//     continuous stream.
//
// mod_audio_stream has no marks, no clear and no DTMF on the socket, and no
// hang-up message (uuid_audio_stream <uuid> stop, or a hang-up, closes it):
// the Conn paces audio in real time, so what the caller heard at a barge-in
// is the Tracker's playback clock and a clear drops the Conn's own queue.
// Text that the module sends later (uuid_audio_stream send_text, stop's
// metadata) decodes as another start, which the Conn reports as a
// *gateway.DecodeError wrapping gateway.ErrOrder and otherwise ignores. The
// streamAudio fields were checked against the README; the binary playback
// of 1.0.3 could not be, as that release is distributed without its source.
package freeswitch

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// MaxMessageSize bounds one inbound message; the module's frames are
// STREAM_BUFFER_SIZE (20 ms by default) of audio.
const MaxMessageSize = 64 << 10

// MaxCommandSize bounds one message to the module (a simulator's limit).
const MaxCommandSize = 1 << 20

const name = "freeswitch"

// Wire names.
const (
	TypeStreamAudio = "streamAudio"
	AudioDataRaw    = "raw"
)

// Codec is mod_audio_stream, or with Fork mod_audio_fork, at one sampling
// rate.
type Codec struct {
	SampleRate int  // 8000 (default) or 16000, as in the start command
	Binary     bool // send audio as raw binary frames instead of streamAudio JSON
	// Fork: the peer is jambonz's mod_audio_fork (it offered Subprotocol):
	// audio goes as binary frames, which it plays, and Hangup is its
	// disconnect message.
	Fork bool
}

// Subprotocol is the WebSocket subprotocol mod_audio_fork offers by default.
const Subprotocol = "audio.drachtio.org"

// mod_audio_fork's message types.
const (
	TypeMark       = "mark"
	TypeKillAudio  = "killAudio"
	TypeClearMarks = "clearMarks"
	TypeDisconnect = "disconnect"
)

func (c Codec) format() media.Format {
	if c.SampleRate == 0 {
		return gateway.L16(8000)
	}
	return gateway.L16(c.SampleRate)
}

// Name returns "freeswitch".
func (Codec) Name() string { return name }

// Capabilities: no DTMF; with Fork, marks (echoed on a clear), clear and
// hang-up, none of them without; L16 at the Codec's rate.
func (c Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{Marks: c.Fork, ClearEchoesMarks: c.Fork, Clear: c.Fork, Hangup: c.Fork,
		Formats: []media.Format{c.format()}, MaxMessage: MaxMessageSize, ImplicitStart: true}
}

// Decode parses one message from mod_audio_stream.
func (c Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Event{}, err
	}
	if f.Binary {
		if len(f.Data)%2 != 0 {
			return gateway.Event{}, gateway.Errorf(name, "audio", "", gateway.ErrPayload, "%d bytes is not whole samples", len(f.Data))
		}
		return gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: f.Data}, nil
	}
	if !utf8.Valid(f.Data) {
		return gateway.Event{}, gateway.Errorf(name, "metadata", "", gateway.ErrMalformed, "not UTF-8")
	}
	if c.Fork {
		if ev, ok, err := decodeMark(f.Data); ok {
			return ev, err
		}
	}
	s := &gateway.Start{StreamID: "freeswitch", Format: c.format()}
	var m map[string]json.RawMessage
	if text := strings.TrimSpace(string(f.Data)); !strings.HasPrefix(text, "{") {
		s.Params = map[string]string{"metadata": string(f.Data)}
	} else if err := gateway.UnmarshalJSON(name, "metadata", f.Data, &m); err != nil {
		return gateway.Event{}, err
	} else {
		s.Params = map[string]string{}
		for k, raw := range m {
			var v string
			if json.Unmarshal(raw, &v) == nil {
				s.Params[k] = v
			}
		}
		if id := s.Params["uuid"]; id != "" {
			s.StreamID = id
		}
	}
	return gateway.Event{Kind: gateway.KindStart, Name: "metadata", Start: s}, nil
}

type play struct {
	Type string    `json:"type"`
	Data *playData `json:"data"`
}

type playData struct {
	AudioDataType string  `json:"audioDataType"`
	SampleRate    int     `json:"sampleRate,omitempty"`
	AudioData     *string `json:"audioData"`
}

type message struct {
	Type string    `json:"type"`
	Data *markData `json:"data,omitempty"`
}

type markData struct {
	Name  string `json:"name"`
	Event string `json:"event,omitempty"`
}

// decodeMark reads mod_audio_fork's mark echo; ok is false for any other
// text (the metadata).
func decodeMark(b []byte) (ev gateway.Event, ok bool, err error) {
	var m struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(b, &m) != nil || m.Type != TypeMark {
		return ev, false, nil
	}
	ev.Name = TypeMark
	var d markData
	if len(m.Data) == 0 || json.Unmarshal(m.Data, &d) != nil || d.Name == "" {
		return ev, true, gateway.Missing(name, TypeMark, "data.name")
	}
	ev.Kind, ev.Mark = gateway.KindMark, d.Name
	return ev, true, nil
}

// Encode renders audio for the module, and with Fork marks, a clear and a
// hang-up.
func (c Codec) Encode(dst []byte, cmd gateway.Command) (gateway.Frame, error) {
	if c.Fork {
		switch cmd.Kind {
		case gateway.KindHangup:
			return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Type: TypeDisconnect})}, nil
		case gateway.KindClear:
			return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Type: TypeKillAudio})}, nil
		case gateway.KindMark:
			return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Type: TypeMark, Data: &markData{Name: cmd.Mark}})}, nil
		}
	}
	if cmd.Kind != gateway.KindAudio {
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	if c.Binary || c.Fork {
		return gateway.Frame{Binary: true, Data: append(dst, cmd.Audio...)}, nil
	}
	a := gateway.EncodeBase64(cmd.Audio)
	return gateway.Frame{Data: gateway.MarshalJSON(dst, play{Type: TypeStreamAudio, Data: &playData{AudioDataType: AudioDataRaw, SampleRate: c.format().SampleRate, AudioData: &a}})}, nil
}

// EncodeEvent renders an event as mod_audio_stream sends it (for
// simulators): the start as its JSON metadata, media as binary frames.
func (c Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	switch e.Kind {
	case gateway.KindStart:
		m := map[string]string{}
		for k, v := range e.Start.Params {
			m[k] = v
		}
		if e.Start.StreamID != "freeswitch" {
			m["uuid"] = e.Start.StreamID
		}
		return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
	case gateway.KindMedia:
		return gateway.Frame{Binary: true, Data: append(dst, e.Audio...)}, nil
	case gateway.KindMark:
		if c.Fork {
			return gateway.Frame{Data: gateway.MarshalJSON(dst, message{Type: TypeMark, Data: &markData{Name: e.Mark, Event: "playout"}})}, nil
		}
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// DecodeCommand parses a message sent to mod_audio_stream, as the module
// would: binary audio, or streamAudio with raw audio at the stream's rate
// (the module also plays wav, mp3 and ogg files; frontdoor sends none).
func (c Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	if err := gateway.CheckSize(name, f, MaxCommandSize); err != nil {
		return gateway.Command{}, err
	}
	if f.Binary {
		return gateway.Command{Kind: gateway.KindAudio, Format: c.format(), Audio: f.Data}, nil
	}
	var p play
	if err := gateway.UnmarshalJSON(name, "", f.Data, &p); err != nil {
		return gateway.Command{}, err
	}
	if c.Fork {
		switch p.Type {
		case TypeDisconnect:
			return gateway.Command{Kind: gateway.KindHangup}, nil
		case TypeKillAudio:
			return gateway.Command{Kind: gateway.KindClear}, nil
		case TypeClearMarks:
			return gateway.Command{Kind: gateway.KindNone}, nil
		case TypeMark:
			var m message
			if err := gateway.UnmarshalJSON(name, TypeMark, f.Data, &m); err != nil {
				return gateway.Command{}, err
			}
			if m.Data == nil || m.Data.Name == "" {
				return gateway.Command{}, gateway.Missing(name, TypeMark, "data.name")
			}
			return gateway.Command{Kind: gateway.KindMark, Mark: m.Data.Name}, nil
		}
	}
	if p.Type != TypeStreamAudio {
		return gateway.Command{}, gateway.Errorf(name, p.Type, "type", gateway.ErrUnknownEvent, "%q", p.Type)
	}
	if p.Data == nil || p.Data.AudioData == nil {
		return gateway.Command{}, gateway.Missing(name, p.Type, "data.audioData")
	}
	format := gateway.L16(p.Data.SampleRate)
	if p.Data.AudioDataType != AudioDataRaw || !slices.Contains(c.Capabilities().Formats, format) {
		return gateway.Command{}, gateway.Errorf(name, p.Type, "data", gateway.ErrUnsupported, "%s at %d Hz", p.Data.AudioDataType, p.Data.SampleRate)
	}
	a, err := gateway.DecodeBase64(name, p.Type, "data.audioData", *p.Data.AudioData)
	return gateway.Command{Kind: gateway.KindAudio, Format: format, Audio: a}, err
}
