package session

import (
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// TestNativeSpeechTurn: espeak speech in binary PCM16 frames on /v1/session,
// declared by hello, becomes one recognized turn with a reply at the
// declared rate.
func TestNativeSpeechTurn(t *testing.T) {
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
	})
	c := r.Dial()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	c.Expect("session")
	s := sessiontest.Speech(t, "hello-16k.wav", 16000)
	for len(s) > 0 { // 40 ms frames, as fast as the socket takes them
		n := min(640, len(s))
		if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, s[:n])); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
	tr := c.Expect("transcript")
	// The fixture has about 3 s of speech between its pads.
	if tr.Turn != "speech-1" || !strings.HasPrefix(tr.Text, "heard ") {
		t.Fatalf("transcript %+v", tr)
	}
	as := c.Expect("audio_start")
	if as.Encoding != "pcm16" || as.Rate != 16000 {
		t.Fatalf("audio_start %+v", as)
	}
	all := c.Until(sessiontest.IsType("turn_end"))
	if end := sessiontest.LastOf(all, "turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
}
