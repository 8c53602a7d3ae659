package session

import (
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session/audiolimit"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// TestAudioLimits: a caller audio frame over the size limit is answered
// too_large and the call goes on; audio faster than the rate allows is
// answered audio_rate and the call is closed 1008.
func TestAudioLimits(t *testing.T) {
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Audio = audiolimit.Limits{MaxFrame: 1000, MaxRate: 4000, Window: time.Second}
	})
	c := r.Admitted()
	if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, make([]byte, 1001)); err != nil {
		t.Fatal(err)
	}
	if m := c.Expect("error"); m.Code != wire.CodeTooLarge {
		t.Fatalf("oversized audio frame: %+v", m)
	}
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "still here"})
	if m := c.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" }); m[len(m)-1].Disposition != "completed" {
		t.Fatalf("after the oversized frame: %v", sessiontest.Types(m))
	}
	// A second's allowance (4000 bytes) goes at once; the rest is over it.
	for range 8 {
		if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, make([]byte, 1000)); err != nil {
			break // closed by the server
		}
	}
	if m := c.Expect("error"); m.Code != audiolimit.Code {
		t.Fatalf("fast audio: %+v, want audio_rate", m)
	}
	_, err := c.Read()
	for err == nil {
		_, err = c.Read()
	}
	if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
		t.Fatalf("close %v (%v), want 1008", got, err)
	}
	sessiontest.WaitFor(t, "the call to end", func() bool { return r.Engine.Calls() == 0 })
}
