package twilio

import (
	"github.com/frontdoorhq/frontdoor/media/gateway"

	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Decode parses one inbound text frame from a gateway. It accepts unknown
// fields (gateways add them) but rejects unknown events, values of the wrong
// JSON type, missing required fields, bad base64 and frames over
// MaxMessageSize; the error is a *DecodeError wrapping ErrTooLarge,
// ErrUnknownEvent, ErrMalformed or ErrPayload.
func Decode(d Dialect, data []byte) (*Message, error) {
	if len(data) > MaxMessageSize {
		return nil, &DecodeError{Err: fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))}
	}
	k := twMediaKeys
	if d == Telnyx {
		k = txMediaKeys
	}
	if m, ok := scanMedia(data, k); ok {
		m.media.Payload = &m.payload
		if d == Telnyx {
			w := txWire{Event: EventMedia, SequenceNumber: gateway.Count(m.seq), StreamID: m.stream, Media: &m.media}
			return w.message()
		}
		w := twWire{Event: EventMedia, SequenceNumber: m.seq, StreamSid: m.stream, Media: &m.media}
		return w.message()
	}
	return decodeJSON(d, data)
}

// decodeJSON is Decode through encoding/json, for every message that
// scanMedia does not read.
func decodeJSON(d Dialect, data []byte) (*Message, error) {
	if d == Telnyx {
		var w txWire
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, jsonError(w.Event, err)
		}
		return w.message()
	}
	var w twWire
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, jsonError(w.Event, err)
	}
	return w.message()
}

func jsonError(event string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &DecodeError{Event: event, Field: te.Field, Err: fmt.Errorf("%w: %s where %s belongs", ErrMalformed, te.Value, te.Type)}
	}
	return &DecodeError{Event: event, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
}

func (w *twWire) message() (*Message, error) {
	m := &Message{Event: w.Event, StreamSID: w.StreamSid}
	var err error
	if w.Event != EventConnected {
		if m.SequenceNumber, err = parseCount(w.Event, "sequenceNumber", w.SequenceNumber, false); err != nil {
			return nil, err
		}
	}
	switch w.Event {
	case EventConnected:
		m.Connected = &Connected{Protocol: w.Protocol, Version: w.Version}
	case EventStart:
		s := w.Start
		if s == nil {
			return nil, missing(w.Event, "start")
		}
		if s.MediaFormat == nil {
			return nil, missing(w.Event, "start.mediaFormat")
		}
		m.Start = &Start{
			StreamSID: s.StreamSid, AccountSID: s.AccountSid, CallSID: s.CallSid,
			Tracks: s.Tracks, CustomParameters: s.CustomParameters,
			MediaFormat: MediaFormat(*s.MediaFormat),
		}
		if m.Start.StreamSID == "" {
			m.Start.StreamSID = w.StreamSid
		}
		if m.Start.StreamSID == "" {
			return nil, missing(w.Event, "start.streamSid")
		}
	case EventMedia:
		if m.Media, err = decodeMedia(w.Event, w.Media); err != nil {
			return nil, err
		}
	case EventDTMF:
		if m.DTMF, err = decodeDTMF(w.Event, w.DTMF); err != nil {
			return nil, err
		}
	case EventMark:
		if m.Mark, err = decodeMark(w.Event, w.Mark); err != nil {
			return nil, err
		}
	case EventStop:
		m.Stop = &Stop{}
		if w.Stop != nil {
			m.Stop = &Stop{AccountSID: w.Stop.AccountSid, CallSID: w.Stop.CallSid}
		}
	default:
		return nil, &DecodeError{Event: w.Event, Err: fmt.Errorf("%w %q", ErrUnknownEvent, w.Event)}
	}
	return m, nil
}

func (w *txWire) message() (*Message, error) {
	m := &Message{Event: w.Event, StreamSID: w.StreamID}
	var err error
	if w.Event != EventConnected {
		if m.SequenceNumber, err = parseCount(w.Event, "sequence_number", string(w.SequenceNumber), false); err != nil {
			return nil, err
		}
	}
	switch w.Event {
	case EventConnected:
		m.Connected = &Connected{Version: w.Version}
	case EventStart:
		s := w.Start
		if s == nil {
			return nil, missing(w.Event, "start")
		}
		if s.MediaFormat == nil {
			return nil, missing(w.Event, "start.media_format")
		}
		if w.StreamID == "" {
			return nil, missing(w.Event, "stream_id")
		}
		m.Start = &Start{
			StreamSID: w.StreamID, AccountSID: s.UserID, CallSID: s.CallControlID,
			Tracks: s.Tracks, CustomParameters: s.CustomParameters,
			MediaFormat: MediaFormat(*s.MediaFormat),
		}
	case EventMedia:
		if m.Media, err = decodeMedia(w.Event, w.Media); err != nil {
			return nil, err
		}
	case EventDTMF:
		if m.DTMF, err = decodeDTMF(w.Event, w.DTMF); err != nil {
			return nil, err
		}
	case EventMark:
		if m.Mark, err = decodeMark(w.Event, w.Mark); err != nil {
			return nil, err
		}
	case EventStop:
		m.Stop = &Stop{}
		if w.Stop != nil {
			m.Stop = &Stop{AccountSID: w.Stop.UserID, CallSID: w.Stop.CallControlID}
		}
	case EventError:
		m.Error = &GatewayError{}
		if w.Payload != nil {
			m.Error = &GatewayError{Code: w.Payload.Code, Title: w.Payload.Title, Detail: w.Payload.Detail}
		}
	default:
		return nil, &DecodeError{Event: w.Event, Err: fmt.Errorf("%w %q", ErrUnknownEvent, w.Event)}
	}
	return m, nil
}

// decodeDTMF and decodeMark serve both dialects, which spell these alike.
func decodeDTMF(event string, w *wDTMF) (*DTMF, error) {
	if w == nil || w.Digit == "" {
		return nil, missing(event, "dtmf.digit")
	}
	return &DTMF{Track: w.Track, Digit: w.Digit}, nil
}

func decodeMark(event string, w *wMark) (*Mark, error) {
	if w == nil || w.Name == "" {
		return nil, missing(event, "mark.name")
	}
	return &Mark{Name: w.Name}, nil
}

func decodeMedia(event string, w *wMedia) (*Media, error) {
	if w == nil || w.Payload == nil {
		return nil, missing(event, "media.payload")
	}
	payload, err := decodePayload(event, *w.Payload)
	if err != nil {
		return nil, err
	}
	chunk, err := parseCount(event, "media.chunk", w.Chunk, false)
	if err != nil {
		return nil, err
	}
	ts, err := parseCount(event, "media.timestamp", w.Timestamp, false)
	if err != nil {
		return nil, err
	}
	if ts > int64(1<<62/time.Millisecond) {
		return nil, &DecodeError{Event: event, Field: "media.timestamp", Err: fmt.Errorf("%w: out of range", ErrMalformed)}
	}
	return &Media{Track: w.Track, Chunk: chunk, Timestamp: time.Duration(ts) * time.Millisecond, Payload: payload}, nil
}

// Encode renders m in dialect d. Together with Decode it round-trips: the
// scripted gateway in twiliotest uses it to play Twilio's side.
func Encode(d Dialect, m *Message) ([]byte, error) {
	seq := ""
	if m.SequenceNumber > 0 {
		seq = strconv.FormatInt(m.SequenceNumber, 10)
	}
	var media *wMedia
	if m.Media != nil {
		p := base64.StdEncoding.EncodeToString(m.Media.Payload)
		media = &wMedia{Track: m.Media.Track, Payload: &p}
		if m.Media.Chunk > 0 {
			media.Chunk = strconv.FormatInt(m.Media.Chunk, 10)
		}
		if ms := m.Media.Timestamp.Milliseconds(); ms > 0 {
			media.Timestamp = strconv.FormatInt(ms, 10)
		}
	}
	var dtmf *wDTMF
	if m.DTMF != nil {
		dtmf = &wDTMF{Track: m.DTMF.Track, Digit: m.DTMF.Digit}
	}
	var mark *wMark
	if m.Mark != nil {
		mark = &wMark{Name: m.Mark.Name}
	}
	if d == Telnyx {
		w := txWire{Event: m.Event, SequenceNumber: gateway.Count(seq), StreamID: m.StreamSID, Media: media, DTMF: dtmf, Mark: mark}
		if m.Connected != nil {
			w.Version = m.Connected.Version
		}
		if s := m.Start; s != nil {
			f := txFormat(s.MediaFormat)
			w.StreamID = s.StreamSID
			w.Start = &txStart{UserID: s.AccountSID, CallControlID: s.CallSID, Tracks: s.Tracks, CustomParameters: s.CustomParameters, MediaFormat: &f}
		}
		if m.Stop != nil {
			w.Stop = &txStop{UserID: m.Stop.AccountSID, CallControlID: m.Stop.CallSID}
		}
		if m.Error != nil {
			w.Payload = &txError{Code: m.Error.Code, Title: m.Error.Title, Detail: m.Error.Detail}
		}
		return json.Marshal(w)
	}
	w := twWire{Event: m.Event, SequenceNumber: seq, StreamSid: m.StreamSID, Media: media, DTMF: dtmf, Mark: mark}
	if m.Connected != nil {
		w.Protocol, w.Version = m.Connected.Protocol, m.Connected.Version
	}
	if s := m.Start; s != nil {
		f := twFormat(s.MediaFormat)
		w.Start = &twStart{StreamSid: s.StreamSID, AccountSid: s.AccountSID, CallSid: s.CallSID, Tracks: s.Tracks, CustomParameters: s.CustomParameters, MediaFormat: &f}
	}
	if m.Stop != nil {
		w.Stop = &twStop{AccountSid: m.Stop.AccountSID, CallSid: m.Stop.CallSID}
	}
	return json.Marshal(w)
}
