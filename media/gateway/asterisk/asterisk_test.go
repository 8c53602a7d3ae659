package asterisk

import (
	"errors"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

const connID = "e226e283-c90a-4ea9-9e37-389000b9ef47"

// TestDecodeDocumented decodes the examples of the chan_websocket page, in
// both control formats; Decode reads either whatever the Codec writes.
func TestDecodeDocumented(t *testing.T) {
	for _, tc := range []struct {
		file string
		want gateway.Event
	}{
		{"media_start.txt", gateway.Event{Kind: gateway.KindStart, Name: EventMediaStart, Start: &gateway.Start{StreamID: connID, CallID: "pbx1-123456789.999",
			Params: map[string]string{"channel": "WebSocket/connectionid"}, Format: media.Telephony}}},
		{"media_start_legacy.txt", gateway.Event{Kind: gateway.KindStart, Name: EventMediaStart, Start: &gateway.Start{StreamID: connID,
			Params: map[string]string{"channel": "WebSocket/connectionid"}, Format: media.Telephony}}},
		{"media_start.json", gateway.Event{Kind: gateway.KindStart, Name: EventMediaStart, Start: &gateway.Start{StreamID: connID, CallID: "pbx1-123456789.999",
			Params: map[string]string{"channel": "WebSocket/connectionid", "SOME_CHANNEL_VARIABLE": "some value", "ANOTHER_CHANNEL_VARIABLE": "some other value"}, Format: media.Telephony}}},
		{"dtmf_end.txt", gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMFEnd, Digit: "5"}},
		{"dtmf_end.json", gateway.Event{Kind: gateway.KindDTMF, Name: EventDTMFEnd, Digit: "5"}},
		{"mark_processed.json", gateway.Event{Kind: gateway.KindMark, Name: EventMarkProcessed, Mark: "u1.1"}},
		{"status.txt", gateway.Event{Kind: gateway.KindInfo, Name: EventStatus, Info: gateway.InfoFlow}},
		{"xoff.txt", gateway.Event{Kind: gateway.KindInfo, Name: EventXOFF, Info: gateway.InfoFlow}},
		{"buffering_completed.txt", gateway.Event{Kind: gateway.KindInfo, Name: EventBufferingDone}},
	} {
		for _, c := range []Codec{{PlainText}, {JSON}} {
			t.Run(tc.file+"/"+c.Control.String(), func(t *testing.T) {
				got, err := c.Decode(gateway.Frame{Data: suite.Testdata(t, tc.file)})
				if err != nil {
					t.Fatal(err)
				}
				suite.SameEvent(t, got, tc.want)
			})
		}
	}
	ev, err := Codec{}.Decode(gateway.Frame{Binary: true, Data: []byte{0xff, 0x7f}})
	if err != nil || ev.Kind != gateway.KindMedia || len(ev.Audio) != 2 {
		t.Fatalf("binary media: %+v, %v", ev, err)
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		c    Codec
		cmd  gateway.Command
		want string
	}{
		{Codec{PlainText}, gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, `MARK_MEDIA u1.1`},
		{Codec{JSON}, gateway.Command{Kind: gateway.KindMark, Mark: "u1.1"}, `{"command":"MARK_MEDIA","correlation_id":"u1.1"}`},
		{Codec{PlainText}, gateway.Command{Kind: gateway.KindClear}, `FLUSH_MEDIA`},
		{Codec{JSON}, gateway.Command{Kind: gateway.KindClear}, `{"command":"FLUSH_MEDIA"}`},
		{Codec{PlainText}, gateway.Command{Kind: gateway.KindHangup}, `HANGUP`},
		{Codec{JSON}, gateway.Command{Kind: gateway.KindHangup}, `{"command":"HANGUP"}`},
	} {
		f, err := tc.c.Encode(nil, tc.cmd)
		if err != nil || f.Binary || string(f.Data) != tc.want {
			t.Errorf("%v Encode(%v) = %s, %v; want %s", tc.c.Control, tc.cmd.Kind, f.Data, err, tc.want)
		}
		back, err := tc.c.DecodeCommand(f)
		if err != nil {
			t.Fatal(err)
		}
		suite.SameCommand(t, back, tc.cmd)
	}
	f, err := Codec{}.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: make([]byte, 160)})
	if err != nil || !f.Binary || len(f.Data) != 160 {
		t.Fatalf("audio: %v %d, %v", f.Binary, len(f.Data), err)
	}
	if _, err := (Codec{PlainText}).Encode(nil, gateway.Command{Kind: gateway.KindMark, Mark: "two words"}); !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("a mark with a space in plain text: %v", err)
	}
	for _, file := range []string{"stop_buffering.json", "stop_buffering.txt"} {
		if c, err := (Codec{}).DecodeCommand(gateway.Frame{Data: suite.Testdata(t, file)}); err != nil || c.Kind != gateway.KindNone {
			t.Fatalf("%s: %+v, %v", file, c, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"empty", "  ", gateway.ErrMalformed},
		{"lower case", "media_start connection_id:x", gateway.ErrMalformed},
		{"two lines", "DTMF_END digit:1\nHANGUP", gateway.ErrMalformed},
		{"two positional", "MEDIA_MARK_PROCESSED a b", gateway.ErrMalformed},
		{"unknown", "MEDIA_PARTY", gateway.ErrUnknownEvent},
		{"no connection id", "MEDIA_START format:ulaw", gateway.ErrMalformed},
		{"opus", "MEDIA_START connection_id:x format:opus", gateway.ErrUnsupported},
		{"30 ms", "MEDIA_START connection_id:x format:ulaw ptime:30", gateway.ErrUnsupported},
		{"frame size", "MEDIA_START connection_id:x format:slin16 optimal_frame_size:160", gateway.ErrUnsupported},
		{"no digit", "DTMF_END", gateway.ErrMalformed},
		{"mark without id", `{"event":"MEDIA_MARK_PROCESSED"}`, gateway.ErrMalformed},
		{"json without event", `{"channel_id":"x"}`, gateway.ErrMalformed},
		{"bad json", `{"event":`, gateway.ErrMalformed},
		{"variables not an object", `{"event":"MEDIA_START","connection_id":"x","format":"ulaw","channel_variables":[1]}`, gateway.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Codec{}.Decode(suite.Text(tc.in))
			var de *gateway.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want a *DecodeError wrapping %v", err, tc.want)
			}
		})
	}
	if _, err := (Codec{}).Decode(gateway.Frame{Binary: true, Data: make([]byte, MaxMessageSize+1)}); !errors.Is(err, gateway.ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
}

func TestConn(t *testing.T) {
	for _, c := range []Codec{{PlainText}, {JSON}} {
		for _, f := range c.Capabilities().Formats {
			t.Run(c.Control.String()+"/"+f.String(), func(t *testing.T) {
				suite.RunConn(t, suite.Setup{Codec: c, Start: gateway.Start{StreamID: connID, CallID: "pbx1-1.2", Format: f}, Malformed: suite.Text("DTMF_END")})
			})
		}
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, Codec{JSON}, suite.Seeds(f, "media_start.txt", "media_start.json", "media_start_legacy.txt", "dtmf_end.txt", "dtmf_end.json", "mark_processed.json", "status.txt", "xoff.txt", "buffering_completed.txt", "stop_buffering.json", "stop_buffering.txt")...)
}

func FuzzDecodePlainText(f *testing.F) {
	suite.Fuzz(f, Codec{PlainText}, suite.Testdata(f, "media_start.txt"), suite.Testdata(f, "dtmf_end.txt"), suite.Testdata(f, "status.txt"), []byte("MEDIA_MARK_PROCESSED u1.1"))
}
