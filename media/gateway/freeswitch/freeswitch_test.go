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
// (lws_glue.cpp's processIncomingBinary) and a hang-up as its disconnect
// message (processIncomingMessage), which it turns into the FreeSWITCH
// event mod_audio_fork::disconnect.
func TestFork(t *testing.T) {
	c := Codec{Fork: true}
	f, err := c.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{1, 0}})
	if err != nil || !f.Binary || string(f.Data) != "\x01\x00" {
		t.Fatalf("audio: %+v, %v", f, err)
	}
	f, err = c.Encode(nil, gateway.Command{Kind: gateway.KindHangup})
	if err != nil || f.Binary || string(f.Data) != `{"type":"disconnect"}` {
		t.Fatalf("hang-up: %s, %v", f.Data, err)
	}
	if !c.Capabilities().Hangup || c.Capabilities().Clear || c.Capabilities().Marks || c.Capabilities().DTMF {
		t.Fatalf("capabilities %+v", c.Capabilities())
	}
	if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: gateway.KindHangup}); err == nil {
		t.Fatal("mod_audio_stream has no hang-up message")
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Testdata(f, "metadata.json"), suite.Testdata(f, "metadata.txt"), suite.Testdata(f, "stream_audio.json"))
}
