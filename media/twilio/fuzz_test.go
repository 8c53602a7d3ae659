package twilio

import (
	"reflect"
	"testing"
)

// FuzzDecode checks that no input panics the decoder, that every failure is
// a *DecodeError, and that whatever decodes re-encodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{exTwConnected, exTwStart, exTwMedia, exTwDTMF, exTwMark, exTwStop, exTxStart, exTxMedia, exTxError, `{"event":"media","media":{"payload":"!"}}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, telnyx bool) {
		d := Twilio
		if telnyx {
			d = Telnyx
		}
		m, err := Decode(d, data)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			return
		}
		b, err := Encode(d, m)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", m, err)
		}
		m2, err := Decode(d, b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v\nvia %s", m, m2, b)
		}
	})
}

// FuzzDecodeOutbound covers the decoder the scripted gateway uses.
func FuzzDecodeOutbound(f *testing.F) {
	f.Add([]byte(`{"event":"media","streamSid":"MZ1","media":{"payload":"////"}}`))
	f.Add([]byte(`{"event":"clear","streamSid":"MZ1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := DecodeOutbound(Twilio, data)
		if err != nil {
			return
		}
		o2, err := DecodeOutbound(Twilio, EncodeOutbound(Twilio, *o))
		if err != nil || !reflect.DeepEqual(o, o2) {
			t.Fatalf("round trip: %+v -> %+v, %v", o, o2, err)
		}
	})
}
