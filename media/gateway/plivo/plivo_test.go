package plivo

import (
	"errors"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

// TestDecodeDocumented decodes the examples of Plivo's protocol pages.
func TestDecodeDocumented(t *testing.T) {
	suite.CheckDecodeFiles(t, Codec{}, []suite.EventCase{
		{File: "start.json", Want: gateway.Event{Kind: gateway.KindStart, Name: "start", Seq: 1, Start: &gateway.Start{
			StreamID: "87654321-4321-4321-4321-cba987654321", CallID: "12345678-1234-1234-1234-123456789abc",
			AccountID: "MAXXXXXXXXXXXXXXXXXX", Params: map[string]string{"userId": "12345", "sessionId": "abc-xyz"},
			Format: media.Telephony,
		}}},
		{File: "media.json", Want: gateway.Event{Kind: gateway.KindMedia, Name: "media", Seq: 42, Audio: []byte{0xff, 0xfb, 0x90, 0xc4, 0, 0}}},
		{File: "dtmf.json", Want: gateway.Event{Kind: gateway.KindDTMF, Name: "dtmf", Seq: 7, Digit: "5"}},
		{File: "playedStream.json", Want: gateway.Event{Kind: gateway.KindMark, Name: "playedStream", Mark: "customer greeting audio"}},
		{File: "clearedAudio.json", Want: gateway.Event{Kind: gateway.KindInfo, Name: "clearedAudio", Seq: 9, Info: gateway.InfoCleared}},
	})
}

// TestDecodeTolerant: the checkpoint's answer spelled "played" (the
// spelling issue 31 reports from Plivo beside the documented
// playedStream) is a mark echo like playedStream, and the numbers Plivo documents as numbers
// (sequenceNumber, chunk) or strings (timestamp) are read in either type
// (testdata/media_strings.json: the media page's example with the types
// swapped).
func TestDecodeTolerant(t *testing.T) {
	suite.CheckDecodeFiles(t, Codec{}, []suite.EventCase{
		{File: "played.json", Want: gateway.Event{Kind: gateway.KindMark, Name: "played", Mark: "customer greeting audio"}},
		{File: "media_strings.json", Want: gateway.Event{Kind: gateway.KindMedia, Name: "media", Seq: 42, Audio: []byte{0xff, 0xfb, 0x90, 0xc4, 0, 0}}},
	})
}

// TestDecodeCommandDocumented decodes the examples of what goes to Plivo.
func TestDecodeCommandDocumented(t *testing.T) {
	suite.CheckDecodeCommandFiles(t, Codec{}, []suite.CommandCase{
		{File: "playAudio.json", Want: gateway.Command{Kind: gateway.KindAudio, Format: gateway.L16(8000), Audio: []byte{0, 0, 0, 0}}},
		{File: "checkpoint.json", Want: gateway.Command{Kind: gateway.KindMark, StreamID: "20170ada-f610-433b-8758-c02a2aab3662", Mark: "customer greeting audio"}},
		{File: "clearAudio.json", Want: gateway.Command{Kind: gateway.KindClear, StreamID: "20170ada-f610-433b-8758-c02a2aab3662"}},
	})
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
	suite.CheckDecodeErrors(t, Codec{}, []suite.ErrorCase{
		{Name: "not json", In: suite.Text(`{`), Want: gateway.ErrMalformed},
		{Name: "binary", In: gateway.Frame{Binary: true, Data: []byte(`{"event":"dtmf"}`)}, Want: gateway.ErrMalformed},
		{Name: "no event", In: suite.Text(`{}`), Want: gateway.ErrMalformed},
		{Name: "unknown", In: suite.Text(`{"event":"playAudio"}`), Want: gateway.ErrUnknownEvent},
		{Name: "start without format", In: suite.Text(`{"event":"start","start":{"streamId":"s"}}`), Want: gateway.ErrMalformed},
		{Name: "start without stream", In: suite.Text(`{"event":"start","start":{"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}}}`), Want: gateway.ErrMalformed},
		{Name: "start in opus", In: suite.Text(`{"event":"start","start":{"streamId":"s","mediaFormat":{"encoding":"audio/opus","sampleRate":48000}}}`), Want: gateway.ErrUnsupported},
		{Name: "mulaw at 16k", In: suite.Text(`{"event":"start","start":{"streamId":"s","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":16000}}}`), Want: gateway.ErrUnsupported},
		{Name: "sequence not a number", In: suite.Text(`{"event":"dtmf","sequenceNumber":"seven","dtmf":{"digit":"1"}}`), Want: gateway.ErrMalformed},
		{Name: "no payload", In: suite.Text(`{"event":"media","media":{}}`), Want: gateway.ErrMalformed},
		{Name: "bad base64", In: suite.Text(`{"event":"media","media":{"payload":"!!"}}`), Want: gateway.ErrPayload},
		{Name: "bad timestamp", In: suite.Text(`{"event":"media","media":{"payload":"","timestamp":"soon"}}`), Want: gateway.ErrMalformed},
		{Name: "no digit", In: suite.Text(`{"event":"dtmf","dtmf":{}}`), Want: gateway.ErrMalformed},
		{Name: "no checkpoint name", In: suite.Text(`{"event":"playedStream","streamId":"s"}`), Want: gateway.ErrMalformed},
		{Name: "oversize", In: gateway.Frame{Data: make([]byte, MaxMessageSize+1)}, Want: gateway.ErrTooLarge},
	})
}

func TestConn(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: Codec{}, Start: gateway.Start{StreamID: "s1", CallID: "c1", Format: f}, Malformed: suite.Text(`{"event":"media","media":{"payload":7}}`)})
		})
	}
}

func TestStop(t *testing.T) { suite.RunStop(t, suite.Setup{Codec: Codec{}}) }

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, suite.Seeds(f, "start.json", "media.json", "dtmf.json", "playedStream.json", "clearedAudio.json", "playAudio.json", "checkpoint.json", "clearAudio.json", "played.json", "media_strings.json")...)
}
