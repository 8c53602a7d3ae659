package twilio

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// sameDecode checks that Decode, which reads plain media messages itself,
// gives what encoding/json gives (decodeJSON), message and error alike.
func sameDecode(t *testing.T, d Dialect, data []byte) {
	t.Helper()
	m1, err1 := Decode(d, data)
	m2, err2 := decodeJSON(d, data)
	if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(m1, m2) {
		t.Fatalf("%v %q:\nDecode     %+v, %v\ndecodeJSON %+v, %v", d, data, m1, err1, m2, err2)
	}
}

func TestScanMedia(t *testing.T) {
	plain := []string{exTwMedia, exTxMedia,
		` { "event" : "media" , "media" : { "payload" : "" } } `,
		"{\"event\":\"media\",\"media\":{\"payload\":\"/38A\",\"track\":\"outbound\"}}\n",
		`{"media":{"timestamp":"20","chunk":"2","payload":"/w=="},"sequenceNumber":"4","event":"media","streamSid":"x"}`}
	for _, in := range plain {
		for _, d := range []Dialect{Twilio, Telnyx} {
			sameDecode(t, d, []byte(in))
		}
	}
	if _, ok := scanMedia([]byte(exTwMedia), twMediaKeys); !ok {
		t.Error("Twilio's media example not read by scanMedia")
	}
	if _, ok := scanMedia([]byte(exTxMedia), txMediaKeys); !ok {
		t.Error("Telnyx's media example not read by scanMedia")
	}
	// Each of these is left to encoding/json, which must answer as before.
	others := []string{
		strings.Replace(exTwMedia, `"event"`, `"Event"`, 1),      // a key in another case
		strings.Replace(exTwMedia, `"3"`, `3`, 1),                // a number
		strings.Replace(exTwMedia, `"/38A"`, `null`, 1),          // null
		strings.Replace(exTwMedia, `"inbound"`, `"in\u0062"`, 1), // an escape
		strings.Replace(exTwMedia, `"inbound"`, `"é"`, 1),        // not ASCII
		strings.Replace(exTwMedia, `"chunk":"1",`, `"chunk":"1","chunk":"2",`, 1),
		strings.Replace(exTwMedia, `"streamSid"`, `"x":1,"streamSid"`, 1),
		exTwMedia + `x`,
		strings.Replace(exTwMedia, `"/38A"`, `"!!"`, 1), // bad base64
		strings.Replace(exTwMedia, `"5"`, `"-5"`, 1),    // not a count
		`{"event":"media","media":{}}`,
		`{"event":"media"}`,
		`{"event":"mark","media":{"payload":""}}`,
		`{"event":"media","media":{"payload":""},}`,
		`{"event":"media","media":{"payload":""}`,
	}
	for _, in := range others {
		for _, d := range []Dialect{Twilio, Telnyx} {
			sameDecode(t, d, []byte(in))
		}
	}
}

func FuzzScanMedia(f *testing.F) {
	for _, s := range []string{exTwMedia, exTxMedia, exTwMark, `{"event":"media","media":{"payload":"!"}}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, telnyx bool) {
		d := Twilio
		if telnyx {
			d = Telnyx
		}
		sameDecode(t, d, data)
	})
}

// BenchmarkDecodeMediaPaths is one inbound 20 ms media message through
// encoding/json (as every message was) and through Decode (scanMedia).
func BenchmarkDecodeMediaPaths(b *testing.B) {
	msg := []byte(EncodeOutbound(Twilio, Outbound{Event: EventMedia, StreamSID: "MZ00000000000000000000000000000002", Payload: make([]byte, 160)}))
	payload := msg[len(`{"event":"media","streamSid":"MZ00000000000000000000000000000002","media":{"payload":"`) : len(msg)-3]
	in := []byte(`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"` +
		string(payload) + `"},"streamSid":"MZ00000000000000000000000000000002"}`)
	for _, p := range []struct {
		name   string
		decode func(Dialect, []byte) (*Message, error)
	}{{"json", decodeJSON}, {"scan", Decode}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := p.decode(Twilio, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
