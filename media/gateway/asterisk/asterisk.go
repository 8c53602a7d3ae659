// Package asterisk is the media protocol of Asterisk's WebSocket channel
// driver, chan_websocket (Asterisk 20.16, 21.11, 22.6, 23.0 and later), as a
// gateway.Codec; package audiosocket has Asterisk's other media socket.
//
// It follows the driver's page in the Asterisk documentation
// (docs.asterisk.org/Configuration/Channel-Drivers/WebSocket):
//
//   - Media both ways is BINARY frames of raw audio in the channel's format,
//     with no header: 160 bytes of ulaw every 20 ms, say. Asterisk re-times
//     what it is sent, but drops what does not fill a frame of
//     optimal_frame_size, so the Conn sends whole 20 ms frames.
//   - Control is TEXT frames, in one of two formats chosen by the driver's
//     control_message_format (or the dial string's f() option): the legacy
//     plain text, "MEDIA_START connection_id:… channel:… format:ulaw
//     optimal_frame_size:160", one line with key:value parameters (or a
//     positional id), and, since 20.18, 22.8 and 23.2, JSON objects,
//     {"event":"MEDIA_START",…} and {"command":"MARK_MEDIA",…}. Decode
//     accepts both; Encode writes the one the Codec's Control says.
//   - Events read: MEDIA_START (connection_id, channel, channel_id, format,
//     optimal_frame_size, ptime, channel_variables), DTMF_END (digit),
//     MEDIA_MARK_PROCESSED (correlation_id), and, as information,
//     MEDIA_XOFF, MEDIA_XON, STATUS, MEDIA_BUFFERING_COMPLETED and
//     QUEUE_DRAINED.
//   - Commands written: MARK_MEDIA (correlation_id), FLUSH_MEDIA and HANGUP.
//
// The stream's identifiers: StreamID is the connection_id, CallID the
// channel_id; the channel name and the JSON format's channel_variables are
// Start.Params. Formats read: ulaw, alaw, slin and slin16 at a ptime of
// 20 ms. Two things the documentation leaves open: the plain-text form of
// MARK_MEDIA and MEDIA_MARK_PROCESSED (the codec writes and reads the id
// positionally, as STOP_MEDIA_BUFFERING and MEDIA_BUFFERING_COMPLETED do, and
// also reads correlation_id:<id>; prefer JSON, for which new features are
// documented), and what FLUSH_MEDIA does to a mark still queued (the codec
// assumes it is discarded with the media, so ClearEchoesMarks is false).
// The stream ends when Asterisk closes the socket; there is no stop event.
// slin is taken as little-endian, the host order of the x86 and ARM
// machines Asterisk runs on.
package asterisk

import (
	"strings"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Subprotocol is the WebSocket subprotocol Asterisk's page sets on the
// websocket client (protocols = media in websocket_client.conf); Asterisk
// offers whatever that setting names, or none.
const Subprotocol = "media"

// MaxMessageSize bounds one message: Asterisk's own websocket code refuses
// messages over 65500 bytes.
const MaxMessageSize = 65500

const name = "asterisk"

// Event and command names.
const (
	EventMediaStart       = "MEDIA_START"
	EventDTMFEnd          = "DTMF_END"
	EventMarkProcessed    = "MEDIA_MARK_PROCESSED"
	EventXOFF             = "MEDIA_XOFF"
	EventXON              = "MEDIA_XON"
	EventStatus           = "STATUS"
	EventBufferingDone    = "MEDIA_BUFFERING_COMPLETED"
	EventQueueDrained     = "QUEUE_DRAINED"
	CommandMarkMedia      = "MARK_MEDIA"
	CommandFlushMedia     = "FLUSH_MEDIA"
	CommandHangup         = "HANGUP"
	CommandAnswer         = "ANSWER"
	CommandReportDrained  = "REPORT_QUEUE_DRAINED"
	CommandGetStatus      = "GET_STATUS"
	CommandStartBuffering = "START_MEDIA_BUFFERING"
	CommandStopBuffering  = "STOP_MEDIA_BUFFERING"
	CommandPauseMedia     = "PAUSE_MEDIA"
	CommandContinueMedia  = "CONTINUE_MEDIA"
	CommandSetDirection   = "SET_MEDIA_DIRECTION"
)

// Control is the format of control messages.
type Control int

// Control formats.
const (
	PlainText Control = iota // Asterisk's default, deprecated
	JSON
)

func (c Control) String() string {
	if c == JSON {
		return "json"
	}
	return "plain-text"
}

// formats maps Asterisk's format names to what they carry.
var formats = map[string]media.Format{
	"ulaw":   media.Telephony,
	"alaw":   {Encoding: media.Alaw, SampleRate: 8000, Channels: 1},
	"slin":   gateway.L16(8000),
	"slin16": gateway.L16(16000),
}

func formatName(f media.Format) string {
	for n, g := range formats {
		if g == f {
			return n
		}
	}
	return ""
}

// Codec is chan_websocket's dialect with the control format it writes.
type Codec struct{ Control Control }

// Name returns "asterisk".
func (Codec) Name() string { return name }

// Capabilities: marks (dropped by a flush), FLUSH_MEDIA, DTMF, HANGUP; ulaw,
// alaw, slin and slin16.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{
		Marks: true, Clear: true, DTMF: true, Hangup: true,
		Formats: []media.Format{formats["ulaw"], formats["alaw"], formats["slin"], formats["slin16"]}, MaxMessage: MaxMessageSize,
	}
}

// message is a control message in either format: its name and parameters.
type message struct {
	name   string
	params map[string]string
	vars   map[string]string // JSON's channel_variables
	id     string            // a positional id (plain text) or correlation_id
}

func (m *message) get(k string) string { return m.params[k] }

func checkText(f gateway.Frame) error {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return err
	}
	if len(strings.TrimSpace(string(f.Data))) == 0 {
		return gateway.Errorf(name, "", "", gateway.ErrMalformed, "empty control message")
	}
	return nil
}

// Decode parses one message from Asterisk.
func (c Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Event{}, err
	}
	if f.Binary {
		return gateway.Event{Kind: gateway.KindMedia, Name: "media", Audio: f.Data}, nil
	}
	m, err := parse(f.Data, "event")
	if err != nil {
		return gateway.Event{}, err
	}
	ev := gateway.Event{Name: m.name}
	switch m.name {
	case EventMediaStart:
		s, err := start(m)
		if err != nil {
			return ev, err
		}
		ev.Kind, ev.Start = gateway.KindStart, s
	case EventDTMFEnd:
		if ev.Digit = m.get("digit"); ev.Digit == "" {
			return ev, gateway.Missing(name, m.name, "digit")
		}
		ev.Kind = gateway.KindDTMF
	case EventMarkProcessed:
		if m.id == "" {
			return ev, gateway.Missing(name, m.name, "correlation_id")
		}
		ev.Kind, ev.Mark = gateway.KindMark, m.id
	case EventXOFF, EventXON, EventStatus:
		ev.Kind, ev.Info = gateway.KindInfo, gateway.InfoFlow
	case EventBufferingDone, EventQueueDrained:
		ev.Kind = gateway.KindInfo
	default:
		return ev, gateway.Errorf(name, m.name, "", gateway.ErrUnknownEvent, "%q", m.name)
	}
	return ev, nil
}

func start(m *message) (*gateway.Start, error) {
	id := m.get("connection_id")
	if id == "" {
		return nil, gateway.Missing(name, m.name, "connection_id")
	}
	fn := m.get("format")
	f, ok := formats[fn]
	if !ok {
		return nil, gateway.Errorf(name, m.name, "format", gateway.ErrUnsupported, "%q", fn)
	}
	if p := m.get("ptime"); p != "" && p != "20" {
		return nil, gateway.Errorf(name, m.name, "ptime", gateway.ErrUnsupported, "%s ms (20 ms frames only)", p)
	}
	if n := m.get("optimal_frame_size"); n != "" && n != itoa(f.BytesPer(media.FrameDuration)) {
		return nil, gateway.Errorf(name, m.name, "optimal_frame_size", gateway.ErrUnsupported, "%s bytes for 20 ms of %s", n, fn)
	}
	s := &gateway.Start{StreamID: id, CallID: m.get("channel_id"), Format: f}
	if ch := m.get("channel"); ch != "" || len(m.vars) > 0 {
		s.Params = map[string]string{}
		for k, v := range m.vars {
			s.Params[k] = v
		}
		if ch != "" {
			s.Params["channel"] = ch
		}
	}
	return s, nil
}

// Encode renders a command to Asterisk in the Codec's control format.
func (c Codec) Encode(dst []byte, cmd gateway.Command) (gateway.Frame, error) {
	switch cmd.Kind {
	case gateway.KindAudio:
		return gateway.Frame{Binary: true, Data: append(dst, cmd.Audio...)}, nil
	case gateway.KindMark:
		return c.render(dst, CommandMarkMedia, "command", cmd.Mark, nil)
	case gateway.KindClear:
		return c.render(dst, CommandFlushMedia, "command", "", nil)
	case gateway.KindHangup:
		return c.render(dst, CommandHangup, "command", "", nil)
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// EncodeEvent renders an event as Asterisk sends it (for simulators).
func (c Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	switch e.Kind {
	case gateway.KindStart:
		s := e.Start
		fn := formatName(s.Format)
		if fn == "" {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		p := [][2]string{{"connection_id", s.StreamID}, {"channel", s.Params["channel"]}, {"channel_id", s.CallID},
			{"format", fn}, {"optimal_frame_size", itoa(s.Format.BytesPer(media.FrameDuration))}, {"ptime", "20"}}
		return c.renderStart(dst, p, s.Params)
	case gateway.KindMedia:
		return gateway.Frame{Binary: true, Data: append(dst, e.Audio...)}, nil
	case gateway.KindDTMF:
		return c.render(dst, EventDTMFEnd, "event", "", [][2]string{{"digit", e.Digit}})
	case gateway.KindMark:
		return c.render(dst, EventMarkProcessed, "event", e.Mark, nil)
	case gateway.KindInfo:
		if e.Info == gateway.InfoFlow {
			return c.render(dst, EventXON, "event", "", nil)
		}
	}
	return gateway.Frame{}, gateway.ErrUnsupported
}

// DecodeCommand parses a message sent to Asterisk, as Asterisk would. The
// commands frontdoor does not send (ANSWER, buffering, pause, status) decode
// as KindNone.
func (c Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return gateway.Command{}, err
	}
	if f.Binary {
		return gateway.Command{Kind: gateway.KindAudio, Audio: f.Data}, nil
	}
	m, err := parse(f.Data, "command")
	if err != nil {
		return gateway.Command{}, err
	}
	switch m.name {
	case CommandMarkMedia:
		return gateway.Command{Kind: gateway.KindMark, Mark: m.id}, nil
	case CommandFlushMedia:
		return gateway.Command{Kind: gateway.KindClear}, nil
	case CommandHangup:
		return gateway.Command{Kind: gateway.KindHangup}, nil
	case CommandAnswer, CommandReportDrained, CommandGetStatus, CommandStartBuffering, CommandStopBuffering,
		CommandPauseMedia, CommandContinueMedia, CommandSetDirection:
		return gateway.Command{Kind: gateway.KindNone}, nil
	}
	return gateway.Command{}, gateway.Errorf(name, m.name, "", gateway.ErrUnknownEvent, "command %q", m.name)
}
