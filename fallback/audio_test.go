package fallback_test

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestPromptAudioWhileSynthesisSaturated: the synthesis stage refuses
// everything, yet the synthesis-overloaded prompt is heard, from audio
// rendered ahead of time outside that stage.
func TestPromptAudioWhileSynthesisSaturated(t *testing.T) {
	synth := stub.NewSynthesizer(stub.Settings{FrameCount: 3, Rate: 16000})
	defer synth.Close()
	s, err := fallback.New(context.Background(), testConfig(t.TempDir()), stubSynth{synth}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !s.PromptsReady() {
		if time.Now().After(deadline) {
			t.Fatal("prompts not rendered ahead of time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rendered := synth.Started()

	// A synthesis stage with its one slot and one waiting place taken.
	ctx := context.Background()
	synthesis, err := stages.NewGate(stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer synthesis.Stop()
	now := time.Now()
	synthesis.Rotate(ctx, "call", 0)
	for _, id := range []string{"a", "b"} {
		synthesis.Submit(ctx, stages.Job{ID: id, Owner: "call", Born: now})
	}
	_, d, err := synthesis.Submit(ctx, stages.Job{ID: "c", Owner: "call", Born: now})
	if err != nil || d != stages.Overloaded {
		t.Fatalf("synthesis stage not saturated: %v, %v", d, err)
	}

	p := prompt.For(prompt.StageSynthesis, d, s.Available())
	audio, err := s.PromptAudio(context.Background(), p.Text)
	if err != nil {
		t.Fatal(err)
	}
	if audio.Rate != 16000 || len(audio.Samples) != 3*320 {
		t.Fatalf("audio %d Hz, %d samples", audio.Rate, len(audio.Samples))
	}
	if synth.Started() != rendered {
		t.Fatalf("prompt rendered again (%d -> %d): not from the cache", rendered, synth.Started())
	}
	if sn, _ := synthesis.Snapshot(ctx); sn.Ledger.Refused.Overloaded != 1 {
		got := sn.Ledger.Refused.Overloaded
		t.Fatalf("synthesis refusals %d", got)
	}
}

// TestPromptAudioSharedRendering: concurrent first uses of one text render
// it once.
func TestPromptAudioSharedRendering(t *testing.T) {
	synth := stub.NewSynthesizer(stub.Settings{SynthDelay: 20 * time.Millisecond})
	defer synth.Close()
	s, err := fallback.New(context.Background(), testConfig(t.TempDir()), stubSynth{synth}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := synth.Started()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := s.PromptAudio(context.Background(), "A text no table row has.")
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The warm-up renders concurrently too; count only this text's work
	// by rendering it once more from the cache.
	if _, err := s.PromptAudio(context.Background(), "A text no table row has."); err != nil {
		t.Fatal(err)
	}
	if n := synth.Started() - before; n > len(prompt.All())+1 {
		t.Fatalf("%d renders", n)
	}
}

// stubSynth renders with the stub synthesizer, as the composition root's
// adapter (session/offer.Synthesizer) renders with the session's.
type stubSynth struct{ s *stub.Synthesizer }

func (a stubSynth) Synthesize(ctx context.Context, text string, emit func(fallback.Audio) error) error {
	return a.s.Synthesize(ctx, text, func(b backend.Audio) error { return emit(fallback.Audio(b)) })
}
