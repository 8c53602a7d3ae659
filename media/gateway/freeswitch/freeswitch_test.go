package freeswitch

import (
	"errors"
	"fmt"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in   gateway.Frame
		c    Codec
		want gateway.Event
	}{
		{gateway.Frame{Data: suite.Testdata(t, "metadata.json")}, Codec{}, gateway.Event{Kind: gateway.KindStart, Name: "metadata", Start: &gateway.Start{
			StreamID: "a1b2c3d4-0000-1111-2222-333344445555", Format: gateway.L16(8000),
			Params: map[string]string{"uuid": "a1b2c3d4-0000-1111-2222-333344445555", "caller": "+15550100", "tenant_hint": "acme"}}}},
		{gateway.Frame{Data: suite.Testdata(t, "metadata.txt")}, Codec{SampleRate: 16000}, gateway.Event{Kind: gateway.KindStart, Name: "metadata", Start: &gateway.Start{
			StreamID: "freeswitch", Format: gateway.L16(16000), Params: map[string]string{"metadata": "call from the lobby phone"}}}},
		{gateway.Frame{Binary: true, Data: []byte{1, 0}}, Codec{}, gateway.Event{Kind: gateway.KindMedia, Name: "audio", Audio: []byte{1, 0}}},
	} {
		got, err := tc.c.Decode(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		suite.SameEvent(t, got, tc.want)
	}
}

// TestStreamAudio encodes audio as the README's play response and reads the
// README's example back.
func TestStreamAudio(t *testing.T) {
	f, err := Codec{}.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0, 1, 0}})
	if err != nil || f.Binary || string(f.Data) != `{"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":8000,"audioData":"AAABAA=="}}` {
		t.Fatalf("Encode = %s, %v", f.Data, err)
	}
	c, err := Codec{}.DecodeCommand(gateway.Frame{Data: suite.Testdata(t, "stream_audio.json")})
	if err != nil {
		t.Fatal(err)
	}
	suite.SameCommand(t, c, gateway.Command{Kind: gateway.KindAudio, Format: gateway.L16(8000), Audio: []byte{0, 0, 1, 0}})
	f, err = Codec{Binary: true}.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0}})
	if err != nil || !f.Binary || len(f.Data) != 2 {
		t.Fatalf("binary Encode = %v, %v", f, err)
	}
	for _, k := range []gateway.Kind{gateway.KindMark, gateway.KindClear, gateway.KindHangup} {
		if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: k}); !errors.Is(err, gateway.ErrUnsupported) {
			t.Fatalf("%v: %v", k, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	suite.CheckDecodeErrors(t, Codec{}, []suite.ErrorCase{
		{Name: "odd audio", In: gateway.Frame{Binary: true, Data: []byte{1}}, Want: gateway.ErrPayload},
		{Name: "not utf-8", In: gateway.Frame{Data: []byte{0xff, 0xfe}}, Want: gateway.ErrMalformed},
		{Name: "broken json", In: gateway.Frame{Data: []byte(`{"uuid":`)}, Want: gateway.ErrMalformed},
		{Name: "oversize", In: gateway.Frame{Binary: true, Data: make([]byte, MaxMessageSize+2)}, Want: gateway.ErrTooLarge},
	})
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"type":"killAudio"}`, gateway.ErrUnknownEvent},
		{`{"type":"streamAudio","data":{"audioDataType":"mp3","audioData":""}}`, gateway.ErrUnsupported},
		{`{"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":16000,"audioData":""}}`, gateway.ErrUnsupported},
		{`{"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":8000,"audioData":"*"}}`, gateway.ErrPayload},
		{`{"type":"streamAudio"}`, gateway.ErrMalformed},
	} {
		if _, err := (Codec{}).DecodeCommand(gateway.Frame{Data: []byte(tc.in)}); !errors.Is(err, tc.want) {
			t.Errorf("DecodeCommand(%s) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

func TestConn(t *testing.T) {
	for _, c := range []Codec{{}, {SampleRate: 16000}, {Binary: true}, {Fork: true}, {Fork: true, SampleRate: 16000}} {
		t.Run(fmt.Sprintf("%v/binary=%v/fork=%v", c.format(), c.Binary, c.Fork), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: c, Start: gateway.Start{StreamID: "fs-uuid", Params: map[string]string{"caller": "+15550100"}},
				Malformed: gateway.Frame{Binary: true, Data: []byte{1, 2, 3}}})
		})
	}
}

// TestFork: for mod_audio_fork, audio goes as the binary frames it plays
// (lws_glue.cpp's processIncomingBinary), marks, killAudio and the
// disconnect as its JSON messages (processIncomingMessage), and its mark
// echoes, as send_mark_event writes them (playout, or cleared after a
// killAudio), are marks; other text is the metadata, the start.
func TestFork(t *testing.T) {
	c := Codec{Fork: true}
	for _, tc := range []struct {
		cmd  gateway.Command
		want string
	}{
		{gateway.Command{Kind: gateway.KindAudio, Audio: []byte{1, 0}}, "\x01\x00"},
		{gateway.Command{Kind: gateway.KindHangup}, `{"type":"disconnect"}`},
		{gateway.Command{Kind: gateway.KindClear}, `{"type":"killAudio"}`},
		{gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, `{"type":"mark","data":{"name":"u1.1"}}`},
	} {
		f, err := c.Encode(nil, tc.cmd)
		if err != nil || f.Binary != (tc.cmd.Kind == gateway.KindAudio) || string(f.Data) != tc.want {
			t.Errorf("Encode(%v) = %q, %v; want %q", tc.cmd.Kind, f.Data, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want gateway.Event
	}{
		{`{"type": "mark", "data": {"name":"u1.1", "event": "playout"}}`, gateway.Event{Kind: gateway.KindMark, Name: "mark", Mark: "u1.1"}},
		{`{"type": "mark", "data": {"name":"u1.1", "event": "cleared"}}`, gateway.Event{Kind: gateway.KindMark, Name: "mark", Mark: "u1.1"}},
		{`{"uuid":"fs-1","caller":"+15550100"}`, gateway.Event{Kind: gateway.KindStart, Name: "metadata",
			Start: &gateway.Start{StreamID: "fs-1", Params: map[string]string{"uuid": "fs-1", "caller": "+15550100"}, Format: gateway.L16(8000)}}},
	} {
		got, err := c.Decode(gateway.Frame{Data: []byte(tc.in)})
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		suite.SameEvent(t, got, tc.want)
	}
	if _, err := c.Decode(gateway.Frame{Data: []byte(`{"type":"mark","data":{}}`)}); err == nil {
		t.Error("a mark without a name decoded")
	}
	caps := c.Capabilities()
	if !caps.Hangup || !caps.Clear || !caps.Marks || !caps.ClearEchoesMarks || caps.DTMF {
		t.Fatalf("capabilities %+v", caps)
	}
	if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: gateway.KindHangup}); err == nil {
		t.Fatal("mod_audio_stream has no hang-up message")
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{Fork: true}, suite.Testdata(f, "metadata.json"), suite.Testdata(f, "metadata.txt"), suite.Testdata(f, "stream_audio.json"), suite.Testdata(f, "fork_mark_playout.json"), suite.Testdata(f, "fork_mark.json"))
}
