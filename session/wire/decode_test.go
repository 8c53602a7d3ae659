package wire

import (
	"errors"
	"testing"
)

// TestNumericBounds covers every number a caller sends on /v1/session
// (turn.age_ms, hello.audio.rate, hello.audio.frame_ms): each is compared with its bounds before
// any arithmetic, so values whose conversion would overflow are refused as
// bad_field like any other out-of-range value, never accepted wrapped.
func TestNumericBounds(t *testing.T) {
	turn := func(age string) string { return `{"type":"turn","id":"t","text":"x","age_ms":` + age + `}` }
	hello := func(rate string) string { return `{"type":"hello","audio":{"encoding":"pcm16","rate":` + rate + `}}` }
	frame := func(ms string) string { return `{"type":"hello","audio":{"frame_ms":` + ms + `}}` }
	for _, tc := range []struct {
		field, in string
		ok        bool
	}{
		{"age_ms", turn("0"), true},
		{"age_ms", turn("600000"), true},
		{"age_ms", turn("-1"), false},
		{"age_ms", turn("600001"), false},
		{"age_ms", turn("9223372036"), false},          // 9.2e9 ms: no overflow, out of range
		{"age_ms", turn("9223372036855"), false},       // × 10^6 wraps to a negative Duration
		{"age_ms", turn("9223372036854775"), false},    // × 10^6 wraps
		{"age_ms", turn("9223372036854775807"), false}, // max int64
		{"age_ms", turn("9223372036854775808"), false}, // over int64
		{"age_ms", turn("-9223372036854775808"), false},
		{"age_ms", turn("1e30"), false},
		{"age_ms", turn("1.5"), false},
		{"age_ms", turn(`"5"`), false},
		{"rate", hello("8000"), true},
		{"rate", hello("48000"), true},
		{"rate", hello("7999"), false},
		{"rate", hello("48001"), false},
		{"rate", hello("0"), true}, // 0: the synthesizer's own rate
		{"rate", hello("-8000"), false},
		{"rate", hello("4294975296"), false}, // 2^32 + 8000: wraps to 8000 in 32 bits
		{"rate", hello("9223372036854775807"), false},
		{"rate", hello("1e30"), false},
		{"rate", hello("8000.5"), false},
		{"frame_ms", frame("0"), true}, // 0: 20 ms
		{"frame_ms", frame("20"), true},
		{"frame_ms", frame("60"), true},
		{"frame_ms", frame("120"), true},
		{"frame_ms", frame("10"), false},
		{"frame_ms", frame("50"), false},
		{"frame_ms", frame("140"), false},
		{"frame_ms", frame("-20"), false},
		{"frame_ms", frame("60.5"), false},
		{"frame_ms", frame("60.0"), false},
		{"frame_ms", frame(`"60"`), false},
		{"frame_ms", frame("1e30"), false},
		{"frame_ms", frame("4294967356"), false},          // 2^32 + 60: wraps to 60 in 32 bits
		{"frame_ms", frame("9223372036854775808"), false}, // over int64
	} {
		ev, err := DecodeText([]byte(tc.in))
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %s refused: %v", tc.field, tc.in, err)
			}
			continue
		}
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Code != CodeBadField {
			t.Errorf("%s: %s: got %+v, %v; want bad_field", tc.field, tc.in, ev, err)
		}
	}
}
