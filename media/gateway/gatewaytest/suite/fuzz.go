package suite

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Fuzz runs a fuzz target over codec's decoders: no input panics, every
// failure is a *gateway.DecodeError, and an event that decodes re-encodes
// (EncodeEvent) to one that decodes the same. The seeds are tried as text
// and as binary frames.
func Fuzz(f *testing.F, codec gateway.Codec, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, binary bool) {
		fr := gateway.Frame{Binary: binary, Data: data}
		if _, err := codec.DecodeCommand(fr); err != nil {
			checkDecodeError(t, err)
		}
		ev, err := codec.Decode(fr)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		start := ev.Start
		if start == nil {
			start = &gateway.Start{StreamID: "fuzz"}
		}
		e2 := ev
		e2.Start = start
		out, err := codec.EncodeEvent(nil, e2)
		if errors.Is(err, gateway.ErrUnsupported) {
			return
		}
		if err != nil {
			t.Fatalf("EncodeEvent(%+v): %v", ev, err)
		}
		back, err := codec.Decode(out)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", out.Data, err)
		}
		if !same(ev, back) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v\nvia %q", ev, back, out.Data)
		}
	})
}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *gateway.DecodeError
	if !errors.As(err, &de) && !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("error %T %v is not a *gateway.DecodeError", err, err)
	}
}

// same compares what an event means, not how the dialect spelled it.
func same(a, b gateway.Event) bool {
	if a.Kind != b.Kind || a.Digit != b.Digit || a.Mark != b.Mark || a.Info != b.Info || !bytes.Equal(a.Audio, b.Audio) {
		return false
	}
	if (a.Start == nil) != (b.Start == nil) {
		return false
	}
	if a.Start != nil {
		x, y := a.Start, b.Start
		return maps.Equal(x.Params, y.Params) && x.StreamID == y.StreamID && x.CallID == y.CallID &&
			x.AccountID == y.AccountID && x.From == y.From && x.To == y.To && x.Format == y.Format
	}
	return true
}
