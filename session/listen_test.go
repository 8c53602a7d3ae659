package session

import (
	"math"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
)

// audio sends ms of caller audio at 8 kHz in 20 ms frames: a tone, or silence.
func (c *client) audio(ms int, loud bool) {
	c.t.Helper()
	for f := 0; f < ms/20; f++ {
		s := make([]int16, 160)
		if loud {
			for i := range s {
				s[i] = int16(8000 * math.Sin(2*math.Pi*300*float64(f*160+i)/8000))
			}
		}
		if err := c.conn.Write(c.ctx, websocket.MessageBinary, pcm.Encode(nil, s)); err != nil {
			c.t.Fatal(err)
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
	c := r.dial()
	c.send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 8000}})
	c.expect("session")
	c.audio(400, true)
	c.audio(700, false)
	tr := c.expect("transcript")
	if !strings.HasPrefix(tr.Text, "heard ") || tr.Turn != "speech-1" {
		t.Fatalf("transcript %+v", tr)
	}
	c.expect("audio_start")
	c.audio(200, true) // the caller speaks over the reply
	all := c.until(isType("interrupted"))
	if in := lastOf(all, "interrupted"); len(in.Cancelled) != 1 || in.Cancelled[0] != "speech-1" {
		t.Fatalf("interrupted %+v", in)
	}
	if s := r.stage(StageRecognize); s.Ledger.Completed != 1 {
		t.Fatalf("recognize ledger %+v", s.Ledger)
	}
}
