package twilio

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// encodeOutboundJSON is EncodeOutbound as it was, through encoding/json:
// the reference the direct encoder must match byte for byte.
func encodeOutboundJSON(d Dialect, o Outbound) []byte {
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
	b, _ := json.Marshal(w)
	return b
}

func TestEncodeOutboundMatchesJSON(t *testing.T) {
	strs := []string{"", "MZ00000000000000000000000000000002", "a\"b", `back\slash`, "<tag>&", "tab\there", "\x00nul", "é utf-8", "\xff\xfe bad", "\u2028", "~"}
	for _, d := range []Dialect{Twilio, Telnyx} {
		for _, ev := range []string{EventMedia, EventMark, EventClear, "other"} {
			for _, s := range strs {
				for _, p := range [][]byte{nil, {}, {0xff}, make([]byte, 160), []byte("abcde")} {
					o := Outbound{Event: ev, StreamSID: s, Payload: p, Mark: s}
					got, want := EncodeOutbound(d, o), encodeOutboundJSON(d, o)
					if !bytes.Equal(got, want) {
						t.Fatalf("%v %+v:\n got %s\nwant %s", d, o, got, want)
					}
				}
			}
		}
	}
}

func FuzzEncodeOutbound(f *testing.F) {
	f.Add("media", "MZ1", "m", []byte{1, 2, 3}, false)
	f.Add("mark", "a<b", "\xff", []byte(nil), true)
	f.Fuzz(func(t *testing.T, ev, sid, mark string, p []byte, telnyx bool) {
		d := Twilio
		if telnyx {
			d = Telnyx
		}
		o := Outbound{Event: ev, StreamSID: sid, Payload: p, Mark: mark}
		if got, want := EncodeOutbound(d, o), encodeOutboundJSON(d, o); !bytes.Equal(got, want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

// BenchmarkEncodeMediaBuffer is one outbound 20 ms media message: through
// encoding/json as it was, and appended to a reused buffer as Conn sends it.
func BenchmarkEncodeMediaBuffer(b *testing.B) {
	o := Outbound{Event: EventMedia, StreamSID: "MZ00000000000000000000000000000002", Payload: make([]byte, 160)}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(160)
		for b.Loop() {
			_ = encodeOutboundJSON(Twilio, o)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(160)
		var buf []byte
		for b.Loop() {
			buf = appendOutbound(buf[:0], Twilio, o)
		}
	})
}
