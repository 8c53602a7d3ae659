package twilio

import (
	"errors"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

// TestCodecConn runs the gateway suite on Twilio's and Telnyx's dialects:
// the generic Conn and simulator serve them as they serve the others.
func TestCodecConn(t *testing.T) {
	for _, d := range []Dialect{Twilio, Telnyx} {
		t.Run(d.String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: Codec{d}, Start: gateway.Start{StreamID: "MZ1", CallID: "CA1", Params: map[string]string{"caller": "+15550100"}},
				Malformed: gateway.Frame{Data: []byte(`{"event":"media","media":{"payload":"!"}}`)}})
			suite.RunStop(t, suite.Setup{Codec: Codec{d}})
		})
	}
}

func TestCodecDecode(t *testing.T) {
	ev, err := Codec{}.Decode(gateway.Frame{Data: []byte(exTwStart)})
	if err != nil || ev.Kind != gateway.KindStart || ev.Start.Format != media.Telephony || ev.Start.StreamID == "" {
		t.Fatalf("start: %+v, %v", ev, err)
	}
	_, err = Codec{}.Decode(gateway.Frame{Data: []byte(`{"event":"dance"}`)})
	var de *gateway.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnknownEvent) || !errors.Is(err, gateway.ErrUnknownEvent) {
		t.Fatalf("unknown event: %v", err)
	}
	_, err = Codec{}.Decode(gateway.Frame{Data: []byte(`{"event":"start","start":{"streamSid":"MZ","mediaFormat":{"encoding":"audio/x-l16","sampleRate":16000}}}`)})
	if !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("L16 start: %v", err)
	}
}

func FuzzCodecDecode(f *testing.F) {
	suite.Fuzz(f, Codec{}, []byte(exTwConnected), []byte(exTwStart), []byte(exTwMedia), []byte(exTwDTMF), []byte(exTwMark), []byte(exTwStop))
}
