package session

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/vad"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestEspeakCall is a whole call through the session server with the real
// espeak-ng synthesizer: the reply the caller receives is speech (a voice
// activity detector finds it), not silence and not a stub tone, and it comes
// at the rate the call declared.
func TestEspeakCall(t *testing.T) {
	if !espeak.Available() {
		t.Fatal("espeak-ng is not installed: the test command installs it (bash .ci/test)")
	}
	synth, err := espeak.New(espeak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := stub.NewModel(stub.Settings{Tokens: 8})
	defer model.Close()
	srv, err := New(Config{
		Session:      stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second},
		Model:        stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second},
		Synthesis:    stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second},
		ModelBackend: model,
		Synthesizer:  synth,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(testHandler(srv, nil))
	defer func() { hs.Close(); srv.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/session", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	send := func(v any) {
		b, _ := json.Marshal(v)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	// A turn sent before the session is admitted is refused not_admitted.
	for admitted := false; !admitted; {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for admission: %v", err)
		}
		var m struct{ Type, Disposition string }
		_ = json.Unmarshal(b, &m)
		admitted = m.Type == "session" && m.Disposition == "admitted"
	}
	send(map[string]any{"type": "turn", "id": "t1", "text": "good morning, how can I help you today"})

	var speech []int16
	rate := 0
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (after %d samples)", err, len(speech))
		}
		if typ == websocket.MessageBinary {
			if speech, err = pcm.Decode(speech, b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var m struct {
			Type, Disposition, Encoding string
			Rate                        int
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "audio_start" {
			if m.Encoding != "pcm16" {
				t.Fatalf("audio_start %+v", m)
			}
			rate = m.Rate
		}
		if m.Type == "turn_end" {
			if m.Disposition != "completed" {
				t.Fatalf("turn_end %+v", m)
			}
			break
		}
	}
	if rate != 16000 {
		t.Fatalf("reply at %d Hz, want the declared 16000", rate)
	}
	if d := time.Duration(len(speech)) * time.Second / time.Duration(rate); d < 500*time.Millisecond {
		t.Fatalf("reply of %v: too short for the sentence", d)
	}
	det, err := vad.New(vad.Config{SampleRate: rate})
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, ev := range det.Process(nil, speech) {
		if ev.Kind == vad.SpeechStart {
			started++
		}
	}
	if started == 0 {
		t.Fatal("no speech in the synthesized reply")
	}
	// Speech, unlike a stub tone, changes its spectrum: the zero-crossing
	// rate of 20 ms frames varies widely across the reply.
	lo, hi := 1.0, 0.0
	n := rate / 50
	for i := 0; i+n <= len(speech); i += n {
		f := speech[i : i+n]
		var energy float64
		cross := 0
		for j := 1; j < len(f); j++ {
			energy += float64(f[j]) * float64(f[j])
			if (f[j] >= 0) != (f[j-1] >= 0) {
				cross++
			}
		}
		if energy/float64(len(f)) < 1e5 { // skip silence
			continue
		}
		z := float64(cross) / float64(len(f))
		lo, hi = min(lo, z), max(hi, z)
	}
	t.Logf("reply %v, zero-crossing rate %.3f..%.3f, %d speech starts", time.Duration(len(speech))*time.Second/time.Duration(rate), lo, hi, started)
	if hi-lo < 0.05 {
		t.Fatalf("zero-crossing rate %.3f..%.3f: a steady tone, not speech", lo, hi)
	}
}
