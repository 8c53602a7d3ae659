package session

import (
	"math"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// audio sends ms of caller audio on c at 8 kHz in 20 ms frames: a tone,
// or silence.
func audio(c *sessiontest.Client, ms int, loud bool) {
	c.T.Helper()
	for f := 0; f < ms/20; f++ {
		s := make([]int16, 160)
		if loud {
			for i := range s {
				s[i] = int16(8000 * math.Sin(2*math.Pi*300*float64(f*160+i)/8000))
			}
		}
		if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, s)); err != nil {
			c.T.Fatal(err)
		}
	}
}

// TestCallerAudio: binary caller audio passes voice activity detection and
// the recognition stage; speech while a reply plays barges in.
func TestCallerAudio(t *testing.T) {
	rec := stub.NewRecognizer(stub.Settings{})
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Recognizer = rec
		c.Pace = true
		s.FrameCount = 100 // a 2 s reply
	})
	c := r.Dial()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 8000}})
	c.Expect("session")
	audio(c, 400, true)
	audio(c, 700, false)
	tr := c.Expect("transcript")
	if !strings.HasPrefix(tr.Text, "heard ") || tr.Turn != "speech-1" {
		t.Fatalf("transcript %+v", tr)
	}
	c.Expect("audio_start")
	audio(c, 200, true) // the caller speaks over the reply
	all := c.Until(sessiontest.IsType("interrupted"))
	if in := sessiontest.LastOf(all, "interrupted"); len(in.Cancelled) != 1 || in.Cancelled[0] != "speech-1" {
		t.Fatalf("interrupted %+v", in)
	}
	if s := r.stage(StageRecognize); s.Ledger.Completed != 1 {
		t.Fatalf("recognize ledger %+v", s.Ledger)
	}
}
