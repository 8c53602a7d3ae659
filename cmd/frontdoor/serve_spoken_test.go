package main

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
)

// TestServeSpokenDefaults runs the binary with its default backends (the
// test's quick stubs undone): espeak-ng speaks, pocketsphinx listens and the
// demo agent answers. A caller asks for the opening hours out loud and gets
// the script's answer, in text and in speech.
func TestServeSpokenDefaults(t *testing.T) {
	if !espeak.Available() || !pocketsphinx.Available() {
		t.Fatal("apt-get install espeak-ng pocketsphinx pocketsphinx-en-us (bash .ci/test does)")
	}
	// The stages' deadlines are long: on a loaded machine (the whole suite
	// beside other work) espeak-ng's first audio came past the default 2 s
	// and the turn expired; what is checked here is the backends, not the
	// deadlines (their own tests hold those).
	p := startServe(t, nil, "-model", "demo", "-synth", "auto", "-recognize", "auto",
		"-recognize-max-wait", "20s", "-model-max-wait", "20s", "-synth-max-wait", "20s", "-synth-segment-grace", "20s")
	var be, slots map[string]any
	waitFor(t, 5*time.Second, "the backends log lines", func() bool {
		select {
		case m := <-p.logs:
			switch m["msg"] {
			case "backends":
				be = m
			case "local recognizer: one recognition per core":
				slots = m
			}
		default:
		}
		return be != nil && slots != nil
	})
	if be["model"] != "demo" || be["synth"] != "espeak" || be["recognize"] != "pocketsphinx" {
		t.Fatalf("backends %v", be)
	}
	// Each recognition keeps a core busy: the stage has a slot per core.
	if n, _ := slots["recognize_slots"].(float64); int(n) != runtime.NumCPU() {
		t.Fatalf("recognize slots %v, want %d", slots, runtime.NumCPU())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	send(t, c, `{"type":"hello","audio":{"encoding":"pcm16","rate":16000}}`)
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	sy, err := espeak.New(espeak.Options{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	var speech []int16
	if err := sy.Synthesize(ctx, "What are your opening hours?", func(a backend.Audio) error {
		speech = append(speech, a.Samples...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if speech, err = pcm.Resample(speech, espeak.Rate, 16000); err != nil {
		t.Fatal(err)
	}
	speech = append(speech, make([]int16, 16000)...) // a second of quiet ends the utterance
	for len(speech) > 0 {
		n := min(640, len(speech))
		if err := c.Write(ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
			t.Fatal(err)
		}
		speech = speech[n:]
	}
	var transcript, reply, end string
	audio := 0
	for end == "" {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (transcript %q, reply %q)", err, transcript, reply)
		}
		if typ == websocket.MessageBinary {
			audio += len(b) / 2
			continue
		}
		var m struct{ Type, Text, Delta, Disposition string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Type {
		case "transcript":
			transcript = m.Text
		case "text":
			reply += m.Delta
		case "turn_end":
			end = m.Disposition
		}
	}
	t.Logf("heard %q; answered %q with %v of speech", transcript, reply, time.Duration(audio)*time.Second/16000)
	if !strings.Contains(transcript, "opening hours") {
		t.Errorf("transcript %q", transcript)
	}
	if end != "completed" || reply != stub.DemoHours {
		t.Errorf("turn %s, reply %q; want the demo agent's %q", end, reply, stub.DemoHours)
	}
	if audio < 16000 {
		t.Errorf("%d samples of reply audio: not a spoken answer", audio)
	}
}
