package twilio

import (
	"errors"
	"strconv"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Codec is Twilio's (or Telnyx's) dialect as a gateway.Codec, so that a
// gateway.Conn, gatewaytest and everything else written for the other
// gateways serve Twilio-family streams too. It is a thin layer over Decode,
// Encode, EncodeOutbound and DecodeOutbound; /v1/twilio runs on it.
type Codec struct{ Dialect Dialect }

// Name returns "twilio" or "telnyx".
func (c Codec) Name() string { return c.Dialect.String() }

// Capabilities: marks, echoed at once by a clear; clear; DTMF; no hang-up
// message (a call moves on to the TwiML after <Connect> when the socket
// closes); 8 kHz µ-law.
func (Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{
		Marks: true, ClearEchoesMarks: true, Clear: true, DTMF: true,
		Formats: []media.Format{media.Telephony}, MaxMessage: MaxMessageSize,
	}
}

// gatewayError turns this package's *DecodeError into a *gateway.DecodeError.
func (c Codec) gatewayError(err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &gateway.DecodeError{Dialect: c.Name(), Event: de.Event, Field: de.Field, Err: de.Err}
	}
	return err
}

// Decode parses one message from the gateway.
func (c Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	if f.Binary {
		return gateway.Event{}, gateway.Errorf(c.Name(), "", "", gateway.ErrMalformed, "binary frame")
	}
	m, err := Decode(c.Dialect, f.Data)
	if err != nil {
		return gateway.Event{}, c.gatewayError(err)
	}
	ev := gateway.Event{Name: m.Event, Seq: m.SequenceNumber}
	switch {
	case m.Connected != nil:
		ev.Kind, ev.Info = gateway.KindInfo, gateway.InfoConnected
	case m.Start != nil:
		s := m.Start
		if !s.MediaFormat.IsMulaw8k() {
			return ev, gateway.Errorf(c.Name(), m.Event, "mediaFormat", gateway.ErrUnsupported, "%+v", s.MediaFormat)
		}
		ev.Kind = gateway.KindStart
		ev.Start = &gateway.Start{StreamID: s.StreamSID, CallID: s.CallSID, AccountID: s.AccountSID, Params: s.CustomParameters, Format: media.Telephony}
	case m.Media != nil:
		ev.Kind, ev.Audio = gateway.KindMedia, m.Media.Payload
	case m.DTMF != nil:
		ev.Kind, ev.Digit = gateway.KindDTMF, m.DTMF.Digit
	case m.Mark != nil:
		ev.Kind, ev.Mark = gateway.KindMark, m.Mark.Name
	case m.Stop != nil:
		ev.Kind = gateway.KindStop
	case m.Error != nil:
		ev.Kind, ev.Err = gateway.KindError, &gateway.GatewayError{Code: strconv.Itoa(m.Error.Code), Message: m.Error.Title}
	}
	return ev, nil
}

// Encode renders a command: media, mark or clear.
func (c Codec) Encode(dst []byte, cmd gateway.Command) (gateway.Frame, error) {
	o := Outbound{StreamSID: cmd.StreamID}
	switch cmd.Kind {
	case gateway.KindAudio:
		o.Event, o.Payload = EventMedia, cmd.Audio
	case gateway.KindMark:
		o.Event, o.Mark = EventMark, cmd.Mark
	case gateway.KindClear:
		o.Event = EventClear
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Data: append(dst, EncodeOutbound(c.Dialect, o)...)}, nil
}

// EncodeEvent renders an event as the gateway sends it (for simulators).
func (c Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	m := &Message{Event: e.Name, SequenceNumber: e.Seq}
	if e.Start != nil {
		m.StreamSID = e.Start.StreamID
	}
	switch e.Kind {
	case gateway.KindInfo:
		if e.Info != gateway.InfoConnected {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		m.Event, m.SequenceNumber, m.Connected = EventConnected, 0, &Connected{Protocol: "Call", Version: "1.0.0"}
	case gateway.KindStart:
		s := e.Start
		enc := "audio/x-mulaw"
		if c.Dialect == Telnyx {
			enc = "PCMU"
		}
		m.Event = EventStart
		m.Start = &Start{StreamSID: s.StreamID, AccountSID: s.AccountID, CallSID: s.CallID, Tracks: []string{"inbound"},
			CustomParameters: s.Params, MediaFormat: MediaFormat{Encoding: enc, SampleRate: 8000, Channels: 1}}
	case gateway.KindMedia:
		m.Event, m.Media = EventMedia, &Media{Track: "inbound", Payload: e.Audio}
	case gateway.KindDTMF:
		m.Event, m.DTMF = EventDTMF, &DTMF{Track: "inbound_track", Digit: e.Digit}
	case gateway.KindMark:
		m.Event, m.Mark = EventMark, &Mark{Name: e.Mark}
	case gateway.KindStop:
		m.Event, m.Stop = EventStop, &Stop{}
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	b, err := Encode(c.Dialect, m)
	if err != nil {
		return gateway.Frame{}, err
	}
	return gateway.Frame{Data: append(dst, b...)}, nil
}

// DecodeCommand parses a message sent to the gateway, as the gateway would.
func (c Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	if f.Binary {
		return gateway.Command{}, gateway.Errorf(c.Name(), "", "", gateway.ErrMalformed, "binary frame (text only)")
	}
	o, err := DecodeOutbound(c.Dialect, f.Data)
	if err != nil {
		return gateway.Command{}, c.gatewayError(err)
	}
	cmd := gateway.Command{StreamID: o.StreamSID, Mark: o.Mark}
	switch o.Event {
	case EventMedia:
		cmd.Kind, cmd.Audio, cmd.Format = gateway.KindAudio, o.Payload, media.Telephony
	case EventMark:
		cmd.Kind = gateway.KindMark
	case EventClear:
		cmd.Kind = gateway.KindClear
	}
	return cmd, nil
}
