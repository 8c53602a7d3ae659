package jambonz

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

func TestDecodeDocumented(t *testing.T) {
	suite.CheckDecodeFiles(t, Codec{}, []suite.EventCase{
		{File: "metadata.json", Want: gateway.Event{Kind: gateway.KindStart, Name: "metadata", Start: &gateway.Start{
			StreamID: "c7a9d2e0-7b0e-4a3f-9e1d-2b6c8f0e4a11", CallID: "f0b5a1f6-3c1e-123e-4b73-06a1e3b5f0c2",
			AccountID: "fef61e75-cec3-496c-a7bc-8368e4d6ab6a", From: "+15083084809", To: "+15083728299", Format: gateway.L16(8000),
			Params: map[string]string{"direction": "inbound", "callStatus": "in-progress", "applicationSid": "0e0681b6-a1d3-4a7b-b8f6-6e8b5a0a3d6e",
				"caller": "+15083084809", "priority": "gold"}}}},
		{File: "dtmf.json", Want: gateway.Event{Kind: gateway.KindDTMF, Name: "dtmf", Digit: "5"}},
		{File: "mark_playout.json", Want: gateway.Event{Kind: gateway.KindMark, Name: "mark", Mark: "u1.1"}},
		{File: "mark_cleared.json", Want: gateway.Event{Kind: gateway.KindMark, Name: "mark", Mark: "u1.1"}},
		{File: "play_done.json", Want: gateway.Event{Kind: gateway.KindInfo, Name: "playDone"}},
	})
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		cmd  gateway.Command
		file string
		want string
	}{
		{gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, "mark.json", `{"type":"mark","data":{"name":"u1.1"}}`},
		{gateway.Command{Kind: gateway.KindClear}, "kill_audio.json", `{"type":"killAudio"}`},
		{gateway.Command{Kind: gateway.KindHangup}, "disconnect.json", `{"type":"disconnect"}`},
	} {
		f, err := Codec{}.Encode(nil, tc.cmd)
		if err != nil || f.Binary || string(f.Data) != tc.want {
			t.Errorf("Encode(%v) = %s, %v; want %s", tc.cmd.Kind, f.Data, err, tc.want)
		}
		got, err := Codec{}.DecodeCommand(gateway.Frame{Data: suite.Testdata(t, tc.file)})
		if err != nil {
			t.Fatal(err)
		}
		suite.SameCommand(t, got, tc.cmd)
	}
	got, err := Codec{}.DecodeCommand(gateway.Frame{Data: suite.Testdata(t, "play_audio.json")})
	if err != nil {
		t.Fatal(err)
	}
	suite.SameCommand(t, got, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0, 1, 0}})
	if c, err := (Codec{}).DecodeCommand(gateway.Frame{Data: suite.Testdata(t, "clear_marks.json")}); err != nil || c.Kind != gateway.KindNone {
		t.Fatalf("clearMarks: %+v, %v", c, err)
	}
	f, err := Codec{}.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{1, 0}})
	if err != nil || !f.Binary || string(f.Data) != "\x01\x00" {
		t.Fatalf("audio: %v, %v", f, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	suite.CheckDecodeErrors(t, Codec{}, []suite.ErrorCase{
		{Name: "not json", In: suite.Text(`[`), Want: gateway.ErrMalformed},
		{Name: "not an object", In: suite.Text(`[1]`), Want: gateway.ErrMalformed},
		{Name: "null", In: suite.Text(`null`), Want: gateway.ErrMalformed},
		{Name: "no callSid", In: suite.Text(`{"sampleRate":8000}`), Want: gateway.ErrMalformed},
		{Name: "no rate", In: suite.Text(`{"callSid":"c"}`), Want: gateway.ErrMalformed},
		{Name: "rate as string", In: suite.Text(`{"callSid":"c","sampleRate":"8000"}`), Want: gateway.ErrMalformed},
		{Name: "11 kHz", In: suite.Text(`{"callSid":"c","sampleRate":11025}`), Want: gateway.ErrUnsupported},
		{Name: "stereo", In: suite.Text(`{"callSid":"c","sampleRate":8000,"mixType":"stereo"}`), Want: gateway.ErrUnsupported},
		{Name: "unknown type", In: suite.Text(`{"type":"verb:hook"}`), Want: gateway.ErrUnknownEvent},
		{Name: "unknown event", In: suite.Text(`{"event":"transcription"}`), Want: gateway.ErrUnknownEvent},
		{Name: "mark without name", In: suite.Text(`{"type":"mark","data":{}}`), Want: gateway.ErrMalformed},
		{Name: "dtmf without digit", In: suite.Text(`{"event":"dtmf"}`), Want: gateway.ErrMalformed},
		{Name: "dtmf as number", In: suite.Text(`{"event":"dtmf","dtmf":5}`), Want: gateway.ErrMalformed},
		{Name: "odd audio", In: gateway.Frame{Binary: true, Data: []byte{0}}, Want: gateway.ErrPayload},
		{Name: "oversize", In: gateway.Frame{Data: make([]byte, MaxMessageSize+1)}, Want: gateway.ErrTooLarge},
	})
}

func TestConn(t *testing.T) {
	pair := suite.WebSocketPair(Codec{}, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}}, &websocket.DialOptions{Subprotocols: []string{Subprotocol}})
	for _, f := range formats[:2] {
		t.Run(f.String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: Codec{}, Pair: pair,
				Start:     gateway.Start{StreamID: "call-sid", From: "+15550100", Params: map[string]string{"caller": "+15550100"}, Format: f},
				Malformed: suite.Text(`{"type":"mark"}`)})
		})
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Seeds(f, "metadata.json", "dtmf.json", "mark_playout.json", "mark_cleared.json", "play_done.json", "play_audio.json", "kill_audio.json", "disconnect.json", "clear_marks.json", "mark.json")...)
}
