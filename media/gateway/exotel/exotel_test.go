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
		{Name: "sequence as object", In: suite.Text(`{"event":"dtmf","sequence_number":{},"dtmf":{"digit":"1"}}`), Want: gateway.ErrMalformed},
		{Name: "sequence not a count", In: suite.Text(`{"event":"dtmf","sequence_number":"x","dtmf":{"digit":"1"}}`), Want: gateway.ErrMalformed},
		{Name: "rate as bool", In: suite.Text(`{"event":"start","start":{"stream_sid":"s","media_format":{"sample_rate":true}}}`), Want: gateway.ErrMalformed},
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
			suite.RunConn(t, suite.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "s1", Format: f}, Malformed: suite.Text(`{"event":"media","media":{"payload":7}}`)})
		})
	}
}

func TestStop(t *testing.T) { suite.RunStop(t, suite.Setup{Codec: Codec{}}) }

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Seeds(f, "connected.json", "start.json", "media.json", "dtmf.json", "mark.json", "stop.json", "clear.json", "mark_out.json", "start_numeric.json", "media_numeric.json", "start_no_format.json")...)
}

// TestDecodeTolerant: what Exotel's clients send beside what its page
// documents is read too: numbers where the page shows strings
// (sequence_number, chunk and sample_rate; Exotel's sample client sends
// numbers, as issue 31 reports, and typed third-party AgentStream clients
// declare them so: testdata/start_numeric.json and media_numeric.json,
// the page's examples with those fields as numbers and the encoding
// spelled "raw/slin" as the Voicebot applet guide names it), and a start
// without media_format (the URL's rate, or 8000). The stream URL's
// sample-rate, when set, is the stream's rate.
func TestDecodeTolerant(t *testing.T) {
	start := func(rate int) *gateway.Start {
		return &gateway.Start{StreamID: sid, CallID: "CAxxxxxxxxxxxxxxxxxxxxxxxx", AccountID: "ACxxxxxxxxxxxxxxxxxxxxxxxx",
			From: "+919876543210", To: "+918047491899", Params: map[string]string{"key1": "value1"}, Format: gateway.L16(rate)}
	}
	noParams := func(rate int) *gateway.Start { s := start(rate); s.Params = nil; return s }
	for _, tc := range []struct {
		name string
		c    Codec
		file string
		want gateway.Event
	}{
		{"numbers in start", Codec{}, "start_numeric.json", gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: start(8000)}},
		{"numbers in media", Codec{}, "media_numeric.json", gateway.Event{Kind: gateway.KindMedia, Name: "media", Seq: 3, Audio: []byte{0, 0, 1, 0}}},
		{"URL rate over the start's", Codec{SampleRate: 16000}, "start.json", gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: start(16000)}},
		{"no media_format", Codec{}, "start_no_format.json", gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: noParams(8000)}},
		{"no media_format, URL rate", Codec{SampleRate: 24000}, "start_no_format.json", gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: noParams(24000)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Decode(gateway.Frame{Data: suite.Testdata(t, tc.file)})
			if err != nil {
				t.Fatal(err)
			}
			suite.SameEvent(t, got, tc.want)
		})
	}
	for _, tc := range []struct {
		q    string
		want int
		ok   bool
	}{{"", 0, true}, {"8000", 8000, true}, {"16000", 16000, true}, {"24000", 24000, true}, {"44100", 0, false}, {"16k", 0, false}} {
		if got, err := ParseSampleRate(tc.q); got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseSampleRate(%q) = %d, %v", tc.q, got, err)
		}
	}
}

// TestChunkSizes: every outbound media message is at least 3.2 KB and a
// multiple of 320 bytes, at each rate Exotel streams (its page's rule for
// the Voicebot applet's chunks).
func TestChunkSizes(t *testing.T) {
	for _, f := range formats {
		d := Codec{}.Capabilities().MessageDuration(f)
		if n := f.BytesPer(d); n < MinChunk || n%ChunkMultiple != 0 {
			t.Errorf("%v: %v messages of %d bytes", f, d, n)
		}
	}
}
