package twilio

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Examples shaped like the ones in Twilio's "Media Streams - WebSocket
// Messages" page and Telnyx's media streaming reference.
const (
	exTwConnected = `{"event":"connected","protocol":"Call","version":"1.0.0"}`
	exTwStart     = `{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC00000000000000000000000000000001","streamSid":"MZ00000000000000000000000000000002","callSid":"CA00000000000000000000000000000003","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"tenant":"acme","caller":"+15550100"}},"streamSid":"MZ00000000000000000000000000000002"}`
	exTwMedia     = `{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"/38A"},"streamSid":"MZ00000000000000000000000000000002"}`
	exTwDTMF      = `{"event":"dtmf","streamSid":"MZ00000000000000000000000000000002","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"1"}}`
	exTwMark      = `{"event":"mark","sequenceNumber":"4","streamSid":"MZ00000000000000000000000000000002","mark":{"name":"my label"}}`
	exTwStop      = `{"event":"stop","sequenceNumber":"5","streamSid":"MZ00000000000000000000000000000002","stop":{"accountSid":"AC00000000000000000000000000000001","callSid":"CA00000000000000000000000000000003"}}`

	exTxStart = `{"event":"start","sequence_number":"1","start":{"user_id":"3e6f995f-85f7-4705-9741-53b116d28237","call_control_id":"v3:abc","client_state":"aGF2ZSBhIG5pY2UgZGF5ID1d","media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}},"stream_id":"32de0dea-53cb-4b21-89a4-9e1819c043bc"}`
	exTxMedia = `{"event":"media","sequence_number":"4","media":{"track":"inbound","chunk":"2","timestamp":"20","payload":"/w=="},"stream_id":"32de0dea-53cb-4b21-89a4-9e1819c043bc"}`
	exTxError = `{"event":"error","sequence_number":"9","stream_id":"32de0dea","payload":{"code":100002,"title":"unknown error","detail":"boom"}}`
)

func TestDecodeTwilio(t *testing.T) {
	const sid = "MZ00000000000000000000000000000002"
	tests := []struct {
		in   string
		want *Message
	}{
		{exTwConnected, &Message{Event: "connected", Connected: &Connected{Protocol: "Call", Version: "1.0.0"}}},
		{exTwStart, &Message{Event: "start", SequenceNumber: 1, StreamSID: sid, Start: &Start{
			StreamSID: sid, AccountSID: "AC00000000000000000000000000000001", CallSID: "CA00000000000000000000000000000003",
			Tracks: []string{"inbound"}, CustomParameters: map[string]string{"tenant": "acme", "caller": "+15550100"},
			MediaFormat: MediaFormat{Encoding: "audio/x-mulaw", SampleRate: 8000, Channels: 1},
		}}},
		{exTwMedia, &Message{Event: "media", SequenceNumber: 3, StreamSID: sid, Media: &Media{
			Track: "inbound", Chunk: 1, Timestamp: 5 * time.Millisecond, Payload: []byte{0xFF, 0x7F, 0x00},
		}}},
		{exTwDTMF, &Message{Event: "dtmf", SequenceNumber: 5, StreamSID: sid, DTMF: &DTMF{Track: "inbound_track", Digit: "1"}}},
		{exTwMark, &Message{Event: "mark", SequenceNumber: 4, StreamSID: sid, Mark: &Mark{Name: "my label"}}},
		{exTwStop, &Message{Event: "stop", SequenceNumber: 5, StreamSID: sid, Stop: &Stop{
			AccountSID: "AC00000000000000000000000000000001", CallSID: "CA00000000000000000000000000000003"}}},
	}
	for _, tt := range tests {
		got, err := Decode(Twilio, []byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%s)\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
		if got.Start != nil && !got.Start.MediaFormat.IsMulaw8k() {
			t.Errorf("start format %+v not µ-law 8k", got.Start.MediaFormat)
		}
	}
}

func TestDecodeTelnyx(t *testing.T) {
	m, err := Decode(Telnyx, []byte(exTxStart))
	if err != nil {
		t.Fatal(err)
	}
	if m.Start.StreamSID != "32de0dea-53cb-4b21-89a4-9e1819c043bc" || m.Start.CallSID != "v3:abc" || !m.Start.MediaFormat.IsMulaw8k() {
		t.Errorf("telnyx start = %+v", m.Start)
	}
	m, err = Decode(Telnyx, []byte(exTxMedia))
	if err != nil || m.Media.Chunk != 2 || m.Media.Timestamp != 20*time.Millisecond || len(m.Media.Payload) != 1 {
		t.Errorf("telnyx media = %+v, %v", m, err)
	}
	m, err = Decode(Telnyx, []byte(exTxError))
	if err != nil || m.Error.Code != 100002 || m.Error.Detail != "boom" {
		t.Errorf("telnyx error = %+v, %v", m, err)
	}
	// Telnyx's sequence_number as a number, as some of its pages show it,
	// is read too (through encoding/json: the scanner takes strings only).
	m, err = Decode(Telnyx, []byte(strings.Replace(exTxMedia, `"sequence_number":"4"`, `"sequence_number":4`, 1)))
	if err != nil || m.SequenceNumber != 4 || len(m.Media.Payload) != 1 {
		t.Errorf("telnyx media with a numeric sequence_number = %+v, %v", m, err)
	}
	// The camelCase spelling is not Telnyx's: the start has no stream_id.
	if _, err := Decode(Telnyx, []byte(exTwStart)); !errors.Is(err, ErrMalformed) {
		t.Errorf("twilio start in telnyx dialect: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  error
		field string
	}{
		{"not json", `{"event":`, ErrMalformed, ""},
		{"unknown event", `{"event":"hello"}`, ErrUnknownEvent, ""},
		{"no event", `{}`, ErrUnknownEvent, ""},
		{"number sequenceNumber", strings.Replace(exTwMedia, `"sequenceNumber":"3"`, `"sequenceNumber":3`, 1), ErrMalformed, "sequenceNumber"},
		{"number chunk", strings.Replace(exTwMedia, `"chunk":"1"`, `"chunk":1`, 1), ErrMalformed, "media.chunk"},
		{"non-numeric timestamp", strings.Replace(exTwMedia, `"timestamp":"5"`, `"timestamp":"5ms"`, 1), ErrMalformed, "media.timestamp"},
		{"string sampleRate", strings.Replace(exTwStart, `"sampleRate":8000`, `"sampleRate":"8000"`, 1), ErrMalformed, "start.mediaFormat.sampleRate"},
		{"number custom parameter", strings.Replace(exTwStart, `"tenant":"acme"`, `"tenant":7`, 1), ErrMalformed, "start.customParameters"},
		{"bad base64", strings.Replace(exTwMedia, `/38A`, `/38A!`, 1), ErrPayload, "media.payload"},
		{"no payload", `{"event":"media","media":{"track":"inbound"}}`, ErrMalformed, "media.payload"},
		{"no start", `{"event":"start","sequenceNumber":"1"}`, ErrMalformed, "start"},
		{"no stream sid", `{"event":"start","start":{"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`, ErrMalformed, "start.streamSid"},
		{"mark without name", `{"event":"mark","mark":{}}`, ErrMalformed, "mark.name"},
		{"dtmf without digit", `{"event":"dtmf","dtmf":{"track":"inbound_track"}}`, ErrMalformed, "dtmf.digit"},
		{"oversize", `{"event":"media","media":{"payload":"` + strings.Repeat("A", MaxMessageSize) + `"}}`, ErrTooLarge, ""},
	}
	for _, tt := range tests {
		_, err := Decode(Twilio, []byte(tt.in))
		var de *DecodeError
		if !errors.Is(err, tt.want) || !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			continue
		}
		if de.Field != tt.field {
			t.Errorf("%s: field %q, want %q", tt.name, de.Field, tt.field)
		}
	}
}

func TestOutbound(t *testing.T) {
	tests := []struct {
		d    Dialect
		o    Outbound
		want string
	}{
		{Twilio, Outbound{Event: EventMedia, StreamSID: "MZ1", Payload: []byte{0xFF, 0xFF, 0xFF}},
			`{"event":"media","streamSid":"MZ1","media":{"payload":"////"}}`},
		{Twilio, Outbound{Event: EventMark, StreamSID: "MZ1", Mark: "u1.1"},
			`{"event":"mark","streamSid":"MZ1","mark":{"name":"u1.1"}}`},
		{Twilio, Outbound{Event: EventClear, StreamSID: "MZ1"}, `{"event":"clear","streamSid":"MZ1"}`},
		{Telnyx, Outbound{Event: EventClear, StreamSID: "s1"}, `{"event":"clear","stream_id":"s1"}`},
	}
	for _, tt := range tests {
		b := EncodeOutbound(tt.d, tt.o)
		if string(b) != tt.want {
			t.Errorf("EncodeOutbound = %s, want %s", b, tt.want)
		}
		o, err := DecodeOutbound(tt.d, b)
		if err != nil || !reflect.DeepEqual(*o, tt.o) {
			t.Errorf("DecodeOutbound(%s) = %+v, %v", b, o, err)
		}
	}
	if _, err := DecodeOutbound(Twilio, []byte(`{"event":"media","media":{"payload":""}}`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("media without streamSid: %v", err)
	}
}

func ExampleDecode() {
	m, err := Decode(Twilio, []byte(`{"event":"media","sequenceNumber":"3","streamSid":"MZ1",`+
		`"media":{"track":"inbound","chunk":"1","timestamp":"20","payload":"/38A"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Event, m.SequenceNumber, m.Media.Chunk, m.Media.Timestamp, m.Media.Payload)

	_, err = Decode(Twilio, []byte(`{"event":"media","sequenceNumber":3,"media":{"payload":""}}`))
	fmt.Println(errors.Is(err, ErrMalformed), err)
	// Output:
	// media 3 1 20ms [255 127 0]
	// true twilio: media: sequenceNumber: malformed message: number where string belongs
}
