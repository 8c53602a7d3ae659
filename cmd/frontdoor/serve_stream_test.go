package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/agent"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
)

// TestServeStreamsARealPacedModel: the binary on its default stage limits,
// in front of an OpenAI-compatible agent that writes 25 words at 10
// tokens a second (2.5 s, longer than the synthesis stage's 2 s max
// wait), with espeak-ng speaking. The caller hears the first sentence
// while the model is still writing, every sentence is synthesized under
// a lease of its own, and the turn completes with no refusal.
func TestServeStreamsARealPacedModel(t *testing.T) {
	if !espeak.Available() {
		t.Fatal("apt-get install espeak-ng (bash .ci/test does)")
	}
	ag := httptest.NewServer(agent.Handler(agent.Config{Words: 25, TokensPerSecond: 10, FirstToken: 100 * time.Millisecond, SentenceWords: 12}))
	defer ag.Close()
	p := startServe(t, nil, "-model", "openai", "-model-url", ag.URL+"/v1", "-synth", "espeak")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	send(t, c, `{"type":"turn","id":"t1","text":"when are you open"}`)
	var log []string
	audioBeforeModelEnd, modelDone := false, false
	segments := map[int]string{}
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v after %v", err, log)
		}
		if typ == websocket.MessageBinary {
			audioBeforeModelEnd = audioBeforeModelEnd || !modelDone
			continue
		}
		var m struct {
			Type, Stage, Disposition, Text string
			Segment                        int
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != "text" {
			log = append(log, m.Type+":"+m.Stage+":"+m.Disposition)
		}
		switch {
		case m.Type == "prompt":
			t.Fatalf("a prompt: %q after %v", m.Text, log)
		case m.Type == "disposition" && m.Stage == "model" && m.Disposition == "completed":
			modelDone = true
		case m.Type == "disposition" && m.Stage == "synthesis":
			segments[m.Segment] = m.Disposition
		}
		if m.Type == "turn_end" {
			if m.Disposition != "completed" {
				t.Fatalf("turn_end %s after %v", m.Disposition, log)
			}
			break
		}
	}
	if !audioBeforeModelEnd {
		t.Fatalf("no audio before the model's reply ended: %v", log)
	}
	for seg := 1; seg <= 3; seg++ {
		if segments[seg] != "completed" {
			t.Fatalf("sentence %d: %q (%v)", seg, segments[seg], log)
		}
	}
}
