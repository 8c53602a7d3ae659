package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
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

// TestAgeOverflowIsBadField is issue 15's case 3 on a real socket: an
// age_ms whose conversion to nanoseconds wraps is answered with error
// bad_field, and no turn is started (no disposition, no turn_end): the call
// goes on.
func TestAgeOverflowIsBadField(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
	})
	a := r.Admitted()
	for _, age := range []int64{9223372036855, 600001, -1} {
		a.SendRaw(fmt.Sprintf(`{"type":"turn","id":"big","text":"x","age_ms":%d}`, age))
		m, err := a.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != "error" || m.Code != CodeBadField {
			t.Fatalf("age_ms %d: got %+v, want error bad_field", age, m)
		}
	}
	a.Send(map[string]any{"type": "turn", "id": "ok", "text": "x", "age_ms": 10})
	for _, m := range a.Until(sessiontest.IsType("turn_end")) {
		if m.Turn == "big" {
			t.Fatalf("a refused turn was started: %+v", m)
		}
		if m.Type == "turn_end" && m.Disposition != "completed" {
			t.Fatalf("turn_end %+v", m)
		}
	}
}
