package vonage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func text(s string) gateway.Frame { return gateway.Frame{Data: []byte(s)} }

func TestDecodeDocumented(t *testing.T) {
	for _, tc := range []struct {
		in   gateway.Frame
		want gateway.Event
	}{
		{gateway.Frame{Data: read(t, "connected.json")}, gateway.Event{Kind: gateway.KindStart, Name: EventConnected, Start: &gateway.Start{
			StreamID: "websocket", Params: map[string]string{"prop1": "value1", "prop2": "value2"}, Format: gateway.L16(16000)}}},
		{text(`{"event":"websocket:connected","content-type":"audio/l16;rate=8000","uuid":"63f61863-4a51-4f6b-86e1-46edebcf9356","n":3}`),
			gateway.Event{Kind: gateway.KindStart, Name: EventConnected, Start: &gateway.Start{StreamID: "63f61863-4a51-4f6b-86e1-46edebcf9356",
				Params: map[string]string{"uuid": "63f61863-4a51-4f6b-86e1-46edebcf9356", "n": "3"}, Format: gateway.L16(8000)}}},
		{gateway.Frame{Binary: true, Data: []byte{1, 0, 2, 0}}, gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: []byte{1, 0, 2, 0}}},
		{gateway.Frame{Data: read(t, "dtmf.json")}, gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMF, Digit: "5"}},
		{text(`{"event":"websocket:dtmf","dtmf":{"digit":"#"}}`), gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMF, Digit: "#"}},
		{gateway.Frame{Data: read(t, "notify.json")}, gateway.Event{Kind: gateway.KindMark, Name: EventNotify, Mark: "u1.1"}},
		{gateway.Frame{Data: read(t, "cleared.json")}, gateway.Event{Kind: gateway.KindInfo, Name: EventCleared, Info: gateway.InfoCleared}},
	} {
		got, err := Codec{}.Decode(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in.Data, err)
		}
		gatewaytest.SameEvent(t, got, tc.want)
	}
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		cmd  gateway.Command
		want gateway.Frame
	}{
		{gateway.Command{Kind: gateway.KindAudio, Audio: make([]byte, 640)}, gateway.Frame{Binary: true, Data: make([]byte, 640)}},
		{gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, text(`{"action":"notify","payload":{"name":"u1.1"}}`)},
		{gateway.Command{Kind: gateway.KindClear}, text(`{"action":"clear"}`)},
	} {
		f, err := Codec{}.Encode(nil, tc.cmd)
		if err != nil || f.Binary != tc.want.Binary || string(f.Data) != string(tc.want.Data) {
			t.Errorf("Encode(%v) = %q, %v", tc.cmd.Kind, f.Data, err)
		}
		back, err := Codec{}.DecodeCommand(f)
		if err != nil {
			t.Fatal(err)
		}
		gatewaytest.SameCommand(t, back, tc.cmd)
	}
	c, err := Codec{}.DecodeCommand(gateway.Frame{Data: read(t, "notify_action.json")})
	if err != nil || c.Kind != gateway.KindMark || c.Mark != "u1.1" {
		t.Fatalf("notify action: %+v, %v", c, err)
	}
	if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: gateway.KindHangup}); !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("hangup: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   gateway.Frame
		want error
	}{
		{"not json", text(`nope`), gateway.ErrMalformed},
		{"no event", text(`{}`), gateway.ErrMalformed},
		{"unknown", text(`{"event":"websocket:party"}`), gateway.ErrUnknownEvent},
		{"no content-type", text(`{"event":"websocket:connected"}`), gateway.ErrMalformed},
		{"content-type not a string", text(`{"event":"websocket:connected","content-type":16000}`), gateway.ErrMalformed},
		{"opus", text(`{"event":"websocket:connected","content-type":"audio/opus"}`), gateway.ErrUnsupported},
		{"l16 at 44.1k", text(`{"event":"websocket:connected","content-type":"audio/l16;rate=44100"}`), gateway.ErrUnsupported},
		{"odd audio", gateway.Frame{Binary: true, Data: []byte{1}}, gateway.ErrPayload},
		{"no digit", text(`{"event":"websocket:dtmf"}`), gateway.ErrMalformed},
		{"digit not a string", text(`{"event":"websocket:dtmf","digit":5}`), gateway.ErrMalformed},
		{"notify without name", text(`{"event":"websocket:notify","payload":{}}`), gateway.ErrMalformed},
		{"oversize", gateway.Frame{Binary: true, Data: make([]byte, MaxMessageSize+2)}, gateway.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Codec{}.Decode(tc.in)
			var de *gateway.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want a *DecodeError wrapping %v", err, tc.want)
			}
		})
	}
	if _, err := (Codec{}).DecodeCommand(gateway.Frame{Binary: true, Data: make([]byte, 100)}); !errors.Is(err, gateway.ErrPayload) {
		t.Fatalf("a partial frame to Vonage: %v", err)
	}
}

func TestConn(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			gatewaytest.RunConn(t, gatewaytest.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "call-uuid", Params: map[string]string{"caller": "+15550100"}, Format: f},
				Malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}})
		})
	}
}

func FuzzDecode(f *testing.F) {
	var seeds [][]byte
	for _, n := range []string{"connected.json", "dtmf.json", "notify.json", "cleared.json", "clear.json", "notify_action.json"} {
		seeds = append(seeds, read(f, n))
	}
	gatewaytest.Fuzz(f, Codec{}, seeds...)
}
