package sip

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadDigit reports a digit that RFC 4733 cannot carry.
var ErrBadDigit = errors.New("sip: not a DTMF digit")

// telephone-event codes 0-15 (RFC 4733 section 3.2).
const dtmfDigits = "0123456789*#ABCD"

// eventCode returns the RFC 4733 event code of a keypad digit.
func eventCode(d rune) (byte, error) {
	for i, c := range dtmfDigits {
		if c == d {
			return byte(i), nil
		}
	}
	if d >= 'a' && d <= 'd' {
		return byte(12 + d - 'a'), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadDigit, d)
}

// telephoneEvent is one RFC 4733 payload: the event, the end bit, the volume
// and the duration so far in timestamp units.
type telephoneEvent struct {
	Event    byte
	End      bool
	Volume   byte
	Duration uint16
}

func parseTelephoneEvent(p []byte) (telephoneEvent, error) {
	if len(p) < 4 {
		return telephoneEvent{}, fmt.Errorf("sip: telephone-event payload of %d bytes, want 4", len(p))
	}
	return telephoneEvent{
		Event:    p[0],
		End:      p[1]&0x80 != 0,
		Volume:   p[1] & 0x3f,
		Duration: binary.BigEndian.Uint16(p[2:4]),
	}, nil
}

func (e telephoneEvent) append(b []byte) []byte {
	flags := e.Volume & 0x3f
	if e.End {
		flags |= 0x80
	}
	b = append(b, e.Event, flags)
	return binary.BigEndian.AppendUint16(b, e.Duration)
}

// dtmfDecoder turns a stream of telephone-event packets into digits, one
// per event. All packets of an event share its RTP timestamp (RFC 4733
// section 2.5.1.2); the digit is reported on the first packet with the end
// bit, and the end's retransmissions (normally three) are ignored. An event
// whose end packets were all lost is reported when the next event begins.
type dtmfDecoder struct {
	active   bool   // an event has begun and not ended
	activeTS uint32 // its timestamp
	activeEv byte
	ended    bool   // an event has ended (doneTS is valid)
	doneTS   uint32 // the timestamp of the last event reported
}

// packet feeds one telephone-event packet and returns the digits it
// completes, at most two (a lost end and a new event's end in one packet).
func (d *dtmfDecoder) packet(ts uint32, payload []byte) ([]rune, error) {
	ev, err := parseTelephoneEvent(payload)
	if err != nil {
		return nil, err
	}
	if d.ended && ts == d.doneTS {
		return nil, nil // a retransmitted end, or a late packet of a reported event
	}
	var out []rune
	if d.active && ts != d.activeTS {
		// A new event while the last one never ended: its end was lost.
		out = appendDigit(out, d.activeEv)
		d.ended, d.doneTS = true, d.activeTS
		d.active = false
	}
	if !ev.End {
		d.active, d.activeTS, d.activeEv = true, ts, ev.Event
		return out, nil
	}
	d.active = false
	d.ended, d.doneTS = true, ts
	return appendDigit(out, ev.Event), nil
}

func appendDigit(out []rune, code byte) []rune {
	if int(code) < len(dtmfDigits) {
		return append(out, rune(dtmfDigits[code]))
	}
	return out // flash (16) and other events are not digits
}
