package exotel

import (
	"errors"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

const sid = "MZxxxxxxxxxxxxxxxxxxxxxxxx"

// TestDecodeDocumented decodes the examples of Exotel's WebSocket protocol page.
func TestDecodeDocumented(t *testing.T) {
	suite.CheckDecodeFiles(t, Codec{}, []suite.EventCase{
		{File: "connected.json", Want: gateway.Event{Kind: gateway.KindInfo, Name: "connected", Info: gateway.InfoConnected}},
		{File: "start.json", Want: gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: &gateway.Start{
			StreamID: sid, CallID: "CAxxxxxxxxxxxxxxxxxxxxxxxx", AccountID: "ACxxxxxxxxxxxxxxxxxxxxxxxx",
			From: "+919876543210", To: "+918047491899", Params: map[string]string{"key1": "value1"}, Format: gateway.L16(8000),
		}}},
		{File: "media.json", Want: gateway.Event{Kind: gateway.KindMedia, Name: "media", Seq: 3, Audio: []byte{0, 0, 1, 0}}},
		{File: "dtmf.json", Want: gateway.Event{Kind: gateway.KindDTMF, Name: "dtmf", Seq: 7, Digit: "5"}},
		{File: "mark.json", Want: gateway.Event{Kind: gateway.KindMark, Name: "mark", Seq: 15, Mark: "greeting-end"}},
		{File: "stop.json", Want: gateway.Event{Kind: gateway.KindStop, Name: "stop", Seq: 20}},
	})
}

func TestDecodeCommandDocumented(t *testing.T) {
	for _, tc := range []struct {
		file string
		want gateway.Command
	}{
		{"clear.json", gateway.Command{Kind: gateway.KindClear, StreamID: sid}},
		{"mark_out.json", gateway.Command{Kind: gateway.KindMark, StreamID: sid, Mark: "greeting-end"}},
	} {
		got, err := Codec{}.DecodeCommand(gateway.Frame{Data: suite.Testdata(t, tc.file)})
		if err != nil {
			t.Fatal(err)
		}
		suite.SameCommand(t, got, tc.want)
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		cmd  gateway.Command
		want string
	}{
		{gateway.Command{Kind: gateway.KindAudio, StreamID: "s", Audio: []byte{1, 0}}, `{"event":"media","stream_sid":"s","media":{"payload":"AQA="}}`},
		{gateway.Command{Kind: gateway.KindMark, StreamID: "s", Mark: "u1.1"}, `{"event":"mark","stream_sid":"s","mark":{"name":"u1.1"}}`},
		{gateway.Command{Kind: gateway.KindClear, StreamID: "s"}, `{"event":"clear","stream_sid":"s"}`},
	} {
		f, err := Codec{}.Encode(nil, tc.cmd)
		if err != nil || f.Binary || string(f.Data) != tc.want {
			t.Errorf("Encode(%v) = %s, %v; want %s", tc.cmd.Kind, f.Data, err, tc.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	suite.CheckDecodeErrors(t, Codec{}, []suite.ErrorCase{
		{Name: "not json", In: suite.Text(`{"event":`), Want: gateway.ErrMalformed},
		{Name: "binary", In: gateway.Frame{Binary: true, Data: []byte{1, 2}}, Want: gateway.ErrMalformed},
		{Name: "unknown", In: suite.Text(`{"event":"clear"}`), Want: gateway.ErrUnknownEvent},
		{Name: "sequence as number", In: suite.Text(`{"event":"dtmf","sequence_number":7,"dtmf":{"digit":"1"}}`), Want: gateway.ErrMalformed},
		{Name: "sequence not a count", In: suite.Text(`{"event":"dtmf","sequence_number":"x","dtmf":{"digit":"1"}}`), Want: gateway.ErrMalformed},
		{Name: "rate as number", In: suite.Text(`{"event":"start","start":{"stream_sid":"s","media_format":{"sample_rate":8000}}}`), Want: gateway.ErrMalformed},
		{Name: "rate 44100", In: suite.Text(`{"event":"start","start":{"stream_sid":"s","media_format":{"sample_rate":"44100"}}}`), Want: gateway.ErrUnsupported},
		{Name: "8-bit", In: suite.Text(`{"event":"start","start":{"stream_sid":"s","media_format":{"sample_rate":"8000","bit_rate":"8"}}}`), Want: gateway.ErrUnsupported},
		{Name: "no stream", In: suite.Text(`{"event":"start","start":{"media_format":{}}}`), Want: gateway.ErrMalformed},
		{Name: "bad base64", In: suite.Text(`{"event":"media","media":{"payload":"%"}}`), Want: gateway.ErrPayload},
		{Name: "bad chunk", In: suite.Text(`{"event":"media","media":{"payload":"","chunk":"-1"}}`), Want: gateway.ErrMalformed},
		{Name: "no mark name", In: suite.Text(`{"event":"mark","mark":{}}`), Want: gateway.ErrMalformed},
		{Name: "oversize", In: gateway.Frame{Data: make([]byte, MaxMessageSize+1)}, Want: gateway.ErrTooLarge},
	})
	if _, err := (Codec{}).DecodeCommand(suite.Text(`{"event":"media","stream_sid":"s","media":{"payload":"AAAA"}}`)); !errors.Is(err, gateway.ErrPayload) {
		t.Errorf("a 3-byte chunk: %v, want ErrPayload (Exotel wants multiples of 320 bytes)", err)
	}
}

func TestConn(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "s1", Format: f}, Malformed: suite.Text(`{"event":"dtmf","dtmf":{"digit":5}}`)})
		})
	}
}

func TestStop(t *testing.T) { suite.RunStop(t, suite.Setup{Codec: Codec{}}) }

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Seeds(f, "connected.json", "start.json", "media.json", "dtmf.json", "mark.json", "stop.json", "clear.json", "mark_out.json")...)
}
