package plivo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
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

// TestDecodeDocumented decodes the examples of Plivo's protocol pages.
func TestDecodeDocumented(t *testing.T) {
	for _, tc := range []struct {
		file string
		want gateway.Event
	}{
		{"start.json", gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: &gateway.Start{
			StreamID: "87654321-4321-4321-4321-cba987654321", CallID: "12345678-1234-1234-1234-123456789abc",
			AccountID: "MAXXXXXXXXXXXXXXXXXX", Params: map[string]string{"userId": "12345", "sessionId": "abc-xyz"},
			Format: media.Telephony,
		}}},
		{"media.json", gateway.Event{Kind: gateway.KindMedia, Name: "media", Seq: 42, Audio: []byte{0xff, 0xfb, 0x90, 0xc4, 0, 0}}},
		{"dtmf.json", gateway.Event{Kind: gateway.KindDTMF, Name: "dtmf", Seq: 7, Digit: "5"}},
		{"playedStream.json", gateway.Event{Kind: gateway.KindMark, Name: "playedStream", Mark: "customer greeting audio"}},
		{"clearedAudio.json", gateway.Event{Kind: gateway.KindInfo, Name: "clearedAudio", Seq: 9, Info: gateway.InfoCleared}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := Codec{}.Decode(gateway.Frame{Data: read(t, tc.file)})
			if err != nil {
				t.Fatal(err)
			}
			gatewaytest.SameEvent(t, got, tc.want)
		})
	}
}

// TestDecodeCommandDocumented decodes the examples of what goes to Plivo.
func TestDecodeCommandDocumented(t *testing.T) {
	for _, tc := range []struct {
		file string
		want gateway.Command
	}{
		{"playAudio.json", gateway.Command{Kind: gateway.KindAudio, Format: gateway.L16(8000), Audio: []byte{0, 0, 0, 0}}},
		{"checkpoint.json", gateway.Command{Kind: gateway.KindMark, StreamID: "20170ada-f610-433b-8758-c02a2aab3662", Mark: "customer greeting audio"}},
		{"clearAudio.json", gateway.Command{Kind: gateway.KindClear, StreamID: "20170ada-f610-433b-8758-c02a2aab3662"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := Codec{}.DecodeCommand(gateway.Frame{Data: read(t, tc.file)})
			if err != nil {
				t.Fatal(err)
			}
			gatewaytest.SameCommand(t, got, tc.want)
		})
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		cmd  gateway.Command
		want string
	}{
		{gateway.Command{Kind: gateway.KindAudio, StreamID: "s", Format: media.Telephony, Audio: []byte{0xff, 0xff, 0xff}},
			`{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"////"}}`},
		{gateway.Command{Kind: gateway.KindAudio, Format: gateway.L16(16000), Audio: []byte{1, 0}},
			`{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":16000,"payload":"AQA="}}`},
		{gateway.Command{Kind: gateway.KindMark, StreamID: "s", Mark: "u1.1"}, `{"event":"checkpoint","streamId":"s","name":"u1.1"}`},
		{gateway.Command{Kind: gateway.KindClear, StreamID: "s"}, `{"event":"clearAudio","streamId":"s"}`},
	} {
		f, err := Codec{}.Encode(nil, tc.cmd)
		if err != nil || f.Binary || string(f.Data) != tc.want {
			t.Errorf("Encode(%v) = %s, %v; want %s", tc.cmd.Kind, f.Data, err, tc.want)
		}
	}
	if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: gateway.KindHangup}); !errors.Is(err, gateway.ErrUnsupported) {
		t.Errorf("hangup: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   gateway.Frame
		want error
	}{
		{"not json", text(`{`), gateway.ErrMalformed},
		{"binary", gateway.Frame{Binary: true, Data: []byte(`{"event":"dtmf"}`)}, gateway.ErrMalformed},
		{"no event", text(`{}`), gateway.ErrMalformed},
		{"unknown", text(`{"event":"playAudio"}`), gateway.ErrUnknownEvent},
		{"start without format", text(`{"event":"start","start":{"streamId":"s"}}`), gateway.ErrMalformed},
		{"start without stream", text(`{"event":"start","start":{"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}}}`), gateway.ErrMalformed},
		{"start in opus", text(`{"event":"start","start":{"streamId":"s","mediaFormat":{"encoding":"audio/opus","sampleRate":48000}}}`), gateway.ErrUnsupported},
		{"mulaw at 16k", text(`{"event":"start","start":{"streamId":"s","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":16000}}}`), gateway.ErrUnsupported},
		{"sequence as string", text(`{"event":"dtmf","sequenceNumber":"7","dtmf":{"digit":"1"}}`), gateway.ErrMalformed},
		{"no payload", text(`{"event":"media","media":{}}`), gateway.ErrMalformed},
		{"bad base64", text(`{"event":"media","media":{"payload":"!!"}}`), gateway.ErrPayload},
		{"bad timestamp", text(`{"event":"media","media":{"payload":"","timestamp":"soon"}}`), gateway.ErrMalformed},
		{"no digit", text(`{"event":"dtmf","dtmf":{}}`), gateway.ErrMalformed},
		{"no checkpoint name", text(`{"event":"playedStream","streamId":"s"}`), gateway.ErrMalformed},
		{"oversize", gateway.Frame{Data: make([]byte, MaxMessageSize+1)}, gateway.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Codec{}.Decode(tc.in)
			var de *gateway.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want a *DecodeError wrapping %v", err, tc.want)
			}
		})
	}
}

func TestConn(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			gatewaytest.RunConn(t, gatewaytest.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "s1", CallID: "c1", Format: f}, Malformed: text(`{"event":"media","media":{"payload":7}}`)})
		})
	}
}

func TestStop(t *testing.T) { gatewaytest.RunStop(t, gatewaytest.Setup{Codec: Codec{}}) }

func FuzzDecode(f *testing.F) {
	var seeds [][]byte
	for _, n := range []string{"start.json", "media.json", "dtmf.json", "playedStream.json", "clearedAudio.json", "playAudio.json", "checkpoint.json", "clearAudio.json"} {
		seeds = append(seeds, read(f, n))
	}
	gatewaytest.Fuzz(f, Codec{}, seeds...)
}
