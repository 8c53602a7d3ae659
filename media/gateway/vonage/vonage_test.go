package vonage

import (
	"errors"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

func TestDecodeDocumented(t *testing.T) {
	for _, tc := range []struct {
		in   gateway.Frame
		want gateway.Event
	}{
		{gateway.Frame{Data: suite.Testdata(t, "connected.json")}, gateway.Event{Kind: gateway.KindStart, Name: EventConnected, Start: &gateway.Start{
			StreamID: "websocket", Params: map[string]string{"prop1": "value1", "prop2": "value2"}, Format: gateway.L16(16000)}}},
		{suite.Text(`{"event":"websocket:connected","content-type":"audio/l16;rate=8000","uuid":"63f61863-4a51-4f6b-86e1-46edebcf9356","n":3}`),
			gateway.Event{Kind: gateway.KindStart, Name: EventConnected, Start: &gateway.Start{StreamID: "63f61863-4a51-4f6b-86e1-46edebcf9356",
				Params: map[string]string{"uuid": "63f61863-4a51-4f6b-86e1-46edebcf9356", "n": "3"}, Format: gateway.L16(8000)}}},
		{gateway.Frame{Binary: true, Data: []byte{1, 0, 2, 0}}, gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: []byte{1, 0, 2, 0}}},
		{gateway.Frame{Data: suite.Testdata(t, "dtmf.json")}, gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMF, Digit: "5"}},
		{suite.Text(`{"event":"websocket:dtmf","dtmf":{"digit":"#"}}`), gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMF, Digit: "#"}},
		{gateway.Frame{Data: suite.Testdata(t, "notify.json")}, gateway.Event{Kind: gateway.KindMark, Name: EventNotify, Mark: "u1.1"}},
		{gateway.Frame{Data: suite.Testdata(t, "cleared.json")}, gateway.Event{Kind: gateway.KindInfo, Name: EventCleared, Info: gateway.InfoCleared}},
	} {
		got, err := Codec{}.Decode(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in.Data, err)
		}
		suite.SameEvent(t, got, tc.want)
	}
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		cmd  gateway.Command
		want gateway.Frame
	}{
		{gateway.Command{Kind: gateway.KindAudio, Audio: make([]byte, 640)}, gateway.Frame{Binary: true, Data: make([]byte, 640)}},
		{gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, suite.Text(`{"action":"notify","payload":{"name":"u1.1"}}`)},
		{gateway.Command{Kind: gateway.KindClear}, suite.Text(`{"action":"clear"}`)},
	} {
		f, err := Codec{}.Encode(nil, tc.cmd)
		if err != nil || f.Binary != tc.want.Binary || string(f.Data) != string(tc.want.Data) {
			t.Errorf("Encode(%v) = %q, %v", tc.cmd.Kind, f.Data, err)
		}
		back, err := Codec{}.DecodeCommand(f)
		if err != nil {
			t.Fatal(err)
		}
		suite.SameCommand(t, back, tc.cmd)
	}
	c, err := Codec{}.DecodeCommand(gateway.Frame{Data: suite.Testdata(t, "notify_action.json")})
	if err != nil || c.Kind != gateway.KindMark || c.Mark != "u1.1" {
		t.Fatalf("notify action: %+v, %v", c, err)
	}
	if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: gateway.KindHangup}); !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("hangup: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	suite.CheckDecodeErrors(t, Codec{}, []suite.ErrorCase{
		{Name: "not json", In: suite.Text(`nope`), Want: gateway.ErrMalformed},
		{Name: "no event", In: suite.Text(`{}`), Want: gateway.ErrMalformed},
		{Name: "unknown", In: suite.Text(`{"event":"websocket:party"}`), Want: gateway.ErrUnknownEvent},
		{Name: "no content-type", In: suite.Text(`{"event":"websocket:connected"}`), Want: gateway.ErrMalformed},
		{Name: "content-type not a string", In: suite.Text(`{"event":"websocket:connected","content-type":16000}`), Want: gateway.ErrMalformed},
		{Name: "opus", In: suite.Text(`{"event":"websocket:connected","content-type":"audio/opus"}`), Want: gateway.ErrUnsupported},
		{Name: "l16 at 44.1k", In: suite.Text(`{"event":"websocket:connected","content-type":"audio/l16;rate=44100"}`), Want: gateway.ErrUnsupported},
		{Name: "odd audio", In: gateway.Frame{Binary: true, Data: []byte{1}}, Want: gateway.ErrPayload},
		{Name: "no digit", In: suite.Text(`{"event":"websocket:dtmf"}`), Want: gateway.ErrMalformed},
		{Name: "digit not a string", In: suite.Text(`{"event":"websocket:dtmf","digit":5}`), Want: gateway.ErrMalformed},
		{Name: "notify without name", In: suite.Text(`{"event":"websocket:notify","payload":{}}`), Want: gateway.ErrMalformed},
		{Name: "oversize", In: gateway.Frame{Binary: true, Data: make([]byte, MaxMessageSize+2)}, Want: gateway.ErrTooLarge},
	})
	if _, err := (Codec{}).DecodeCommand(gateway.Frame{Binary: true, Data: make([]byte, 100)}); !errors.Is(err, gateway.ErrPayload) {
		t.Fatalf("a partial frame to Vonage: %v", err)
	}
}

func TestConn(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "call-uuid", Params: map[string]string{"caller": "+15550100"}, Format: f},
				Malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}})
		})
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Seeds(f, "connected.json", "dtmf.json", "notify.json", "cleared.json", "clear.json", "notify_action.json")...)
}
