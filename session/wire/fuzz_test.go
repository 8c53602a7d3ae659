package wire

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeText: the session protocol decoder never panics, answers bad
// input only with a *ProtocolError of a known code, and what it accepts
// stays within the protocol's bounds. Seeds: testdata/fuzz/FuzzDecodeText
// and the messages below; long runs: .ci/fuzz.
func FuzzDecodeText(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","audio":{"encoding":"pcm16","rate":16000}}`,
		`{"type":"turn","id":"t1","text":"hello","age_ms":20}`,
		`{"type":"barge_in"}`, `{"type":"hangup"}`,
		`{"type":"callback","consent":true,"number":"+15550123"}`,
		`{`, `[]`, `null`, `{"type":7}`, `{"type":"turn","id":"x","text":7}`,
		// age_ms whose conversion to nanoseconds wraps (issue 15).
		`{"type":"turn","id":"t1","text":"x","age_ms":9223372036855}`,
	} {
		f.Add([]byte(s))
	}
	codes := map[string]bool{CodeBadJSON: true, CodeUnknownType: true, CodeBadField: true, CodeTooLarge: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeText(data)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) || !codes[pe.Code] {
				t.Fatalf("error %v (%T): want a *ProtocolError of a decoder code", err, err)
			}
			return
		}
		switch ev.Kind {
		case EventTurn:
			if ev.Turn.ID == "" || len(ev.Turn.ID) > MaxTurnID || !utf8.ValidString(ev.Turn.ID) {
				t.Fatalf("turn id %q accepted", ev.Turn.ID)
			}
			if a := ev.Turn.AgeMS; a != nil && (*a < 0 || *a > MaxTurnAge.Milliseconds()) {
				t.Fatalf("turn age_ms %d accepted", *a)
			}
			if len(ev.Turn.Text) > MaxTurnText || ev.Turn.Age() < 0 || ev.Turn.Age() > MaxTurnAge {
				t.Fatalf("turn out of bounds accepted: %d bytes, age %v", len(ev.Turn.Text), ev.Turn.Age())
			}
		case EventHello:
			if r := ev.Audio.SampleRate; r != 0 && (r < 8000 || r > 48000) {
				t.Fatalf("hello rate %d accepted", r)
			}
		case EventOther:
			if ev.Type == "" || len(ev.Type) > 64 {
				t.Fatalf("other type %q accepted", ev.Type)
			}
		case EventBargeIn, EventHangup:
		default:
			t.Fatalf("decoded kind %q from text", ev.Kind)
		}
	})
}
