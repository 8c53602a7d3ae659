package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
)

// A refused turn's fallback prompt is spoken (audio_start, frames,
// audio_end under the turn's id): that speech is not the turn's answer, so
// it counts for neither goodput nor late, and an offer of a callback is
// answered with consent. The server is scripted, so the outcome is exact.
func TestPromptSpeechIsNotGoodput(t *testing.T) {
	ts, heard := nativeScript(t, func(p *nativePeer) {
		p.send(map[string]any{"type": "session", "disposition": "admitted", "session": "s1"})
		turn := p.read()
		if turn == nil {
			return
		}
		id := turn["id"]
		p.send(map[string]any{"type": "disposition", "stage": "model", "turn": id, "generation": 1, "disposition": "overloaded"})
		p.send(map[string]any{"type": "prompt", "reason": "overloaded", "stage": "model", "turn": id, "text": "Too many people are asking at once."})
		p.send(map[string]any{"type": "audio_start", "turn": id, "generation": 1, "encoding": "pcm16", "rate": 16000})
		for range 3 {
			p.audio(640)
		}
		p.send(map[string]any{"type": "audio_end", "turn": id, "generation": 1})
		p.send(map[string]any{"type": "offer", "kinds": []string{"callback"}})
		p.send(map[string]any{"type": "turn_end", "turn": id, "generation": 1, "disposition": "overloaded", "stage": "model"})
		p.hangUp() // the callback comes first
	})

	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: 1, Rate: 1, Turns: 1,
		Callback: 1, Deadline: time.Second, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Goodput
	if g.Good != 0 || g.Late != 0 || g.Refused != 1 || r.FirstAud.N != 0 {
		t.Errorf("goodput %+v, first audio n=%d: want the refusal only", g, r.FirstAud.N)
	}
	if r.Fallback.PromptFrames != 3 || r.Fallback.Prompts["overloaded"] != 1 {
		t.Errorf("fallback %+v: want 1 prompt of 3 frames", r.Fallback)
	}
	if r.Fallback.CallbackOffered != 1 || r.Fallback.CallbackAccepted != 1 {
		t.Errorf("fallback %+v: want the callback offered and accepted", r.Fallback)
	}
	callback := heard.first("callback")
	if callback == nil || callback["consent"] != true || callback["number"] == "" {
		t.Errorf("callback message %v: want consent and a number", callback)
	}
}
