package session

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// The reader hands over to a fresh goroutine after every text message
// (readLoop): messages are still handled one at a time, in order.
func TestReaderHandOverKeepsOrder(t *testing.T) {
	r := newRig(t)
	c := r.Admitted()
	const n = 40
	for i := range n {
		c.SendRaw(`{"type":"x` + itoa(i) + `"}`)
	}
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	for i := range n {
		m := c.Expect("error")
		if want := `unknown message type "x` + itoa(i) + `"`; m.Code != wire.CodeUnknownType || m.Message != want {
			t.Fatalf("error %d: %s %q, want %q", i, m.Code, m.Message, want)
		}
	}
	c.Expect("turn_end")
}
