package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

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
		if m.Type != "error" || m.Code != wire.CodeBadField {
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
