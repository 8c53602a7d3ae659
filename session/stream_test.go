package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/meter"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// scriptModel is a backend.Model whose replies a test writes delta by
// delta: a turn whose text has a script waits for each delta the test
// sends on it, and ends when the test closes it (with end's error); any
// other turn is answered with its own text at once.
type scriptModel struct {
	mu      sync.Mutex
	scripts map[string]chan string
	end     error
	stopped chan string       // the text of each scripted turn whose Reply returned
	history []backend.Message // the last turn's
}

func newScriptModel(texts ...string) *scriptModel {
	m := &scriptModel{scripts: map[string]chan string{}, stopped: make(chan string, 16)}
	for _, t := range texts {
		m.scripts[t] = make(chan string)
	}
	return m
}

func (m *scriptModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	m.mu.Lock()
	ch := m.scripts[t.Text]
	m.history = slices.Clone(t.History)
	m.mu.Unlock()
	if ch == nil {
		return emit(t.Text)
	}
	defer func() { m.stopped <- t.Text }()
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				m.mu.Lock()
				defer m.mu.Unlock()
				return m.end
			}
			if err := emit(d); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// historyOf is the history the model is given with a next turn of a's,
// one it answers at once.
func (m *scriptModel) historyOf(t *testing.T, a *sessiontest.Client) []backend.Message {
	t.Helper()
	a.Send(map[string]any{"type": "turn", "id": "next", "text": "next."})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "next" })
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.history
}

// write sends the scripted turn text's next delta (the model takes it
// once the turn runs).
func (m *scriptModel) write(t *testing.T, text, delta string) {
	t.Helper()
	select {
	case m.scripts[text] <- delta:
	case <-time.After(5 * time.Second):
		t.Fatalf("the model of %q never asked for %q", text, delta)
	}
}

// recSynth is the stub synthesizer that records the texts it is given,
// and holds any text with "hold" in it until released.
type recSynth struct {
	*stub.Synthesizer
	mu      sync.Mutex
	texts   []string
	release chan struct{}
}

func newRecSynth() *recSynth {
	s := sessiontest.Settings()
	return &recSynth{Synthesizer: stub.NewSynthesizer(s), release: make(chan struct{})}
}

func (s *recSynth) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
	if strings.Contains(text, "hold") {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Synthesizer.Synthesize(ctx, text, emit)
}

func (s *recSynth) said() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.texts)
}

// scriptedTurn is a rig on a script model and a recording synthesizer
// with one admitted caller whose turn t1 says q (scripted).
func scriptedTurn(t *testing.T, q string) (*rig, *scriptModel, *recSynth, *sessiontest.Client) {
	t.Helper()
	model, synth := newScriptModel(q), newRecSynth()
	r := newRig(t, func(c *Config, _ *stub.Settings) { c.ModelBackend, c.Synthesizer = model, synth })
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	return r, model, synth, a
}

func isDisp(stage, disp string, seg int) func(sessiontest.Msg) bool {
	return func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == stage && m.Disposition == disp && m.Segment == seg
	}
}

// TestStreamedReply: the first sentence is synthesized and its audio sent
// while the model is still writing; each later sentence follows as soon
// as it is complete, under a synthesis lease of its own; the turn ends
// completed once all of it was sent, and the ledgers balance.
func TestStreamedReply(t *testing.T) {
	const q = "what are your hours"
	r, model, synth, a := scriptedTurn(t, q)
	model.write(t, q, "We open at 9.")
	model.write(t, q, "30 on weekdays.") // "9." was no sentence end
	model.write(t, q, " Dr.")
	all := a.Until(sessiontest.IsType("audio_start"))
	if got := synth.said(); !slices.Equal(got, []string{"We open at 9.30 on weekdays."}) {
		t.Fatalf("synthesized %q before the model ended", got)
	}
	if slices.ContainsFunc(all, isDisp(StageModel, "completed", 0)) {
		t.Fatalf("the model completed before first audio: %v", sessiontest.Types(all))
	}
	model.write(t, q, " Lee is in on Fridays.")
	model.write(t, q, " Anything else")
	close(model.scripts[q])
	all = a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
	want := []string{"We open at 9.30 on weekdays.", "Dr. Lee is in on Fridays.", "Anything else"}
	if got := synth.said(); !slices.Equal(got, want) {
		t.Fatalf("synthesized %q, want %q", got, want)
	}
	for seg := 2; seg <= 3; seg++ {
		if !slices.ContainsFunc(all, isDisp(StageSynthesis, "completed", seg)) {
			t.Errorf("no synthesis completed for sentence %d: %v", seg, sessiontest.Types(all))
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(all), func(m sessiontest.Msg) bool { return m.Type != "audio_start" })); n != 0 {
		t.Errorf("%d more audio_start: one reply is one audio_start … audio_end", n)
	}
	r.released(StageModel, StageSynthesis)
	if s := r.stage(StageSynthesis); s.Ledger.Admitted != 3 {
		t.Errorf("synthesis admitted %d leases, want one per sentence", s.Ledger.Admitted)
	}
}

// TestStreamedBargeInBetweenSentences: a barge-in while the model writes
// its second sentence cancels the model at once; the caller's history
// keeps what was heard (the first sentence), and not one frame of the
// turn follows interrupted.
func TestStreamedBargeInBetweenSentences(t *testing.T) {
	const q = "tell me a story"
	r, model, _, a := scriptedTurn(t, q)
	model.write(t, q, "Once upon a time.")
	model.write(t, q, " There was")
	untilFrames(t, a, 5) // the first sentence, whole
	a.Send(map[string]any{"type": "barge_in"})
	in := a.Expect("interrupted")
	if in.Heard == nil || in.Heard.Text != "Once upon a time." {
		t.Fatalf("heard %+v, want the first sentence", in.Heard)
	}
	if got := <-model.stopped; got != q {
		t.Fatalf("stopped %q", got)
	}
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != "cancelled" {
		t.Fatalf("turn_end %+v", end)
	}
	if slices.ContainsFunc(all, func(m sessiontest.Msg) bool { return m.Type == "binary" || m.Type == "audio_start" }) {
		t.Fatalf("audio after interrupted: %v", sessiontest.Types(all))
	}
	h := model.historyOf(t, a)
	if len(h) != 2 || h[1].Content != "Once upon a time." {
		t.Fatalf("history %+v, want the question and the sentence heard", h)
	}
	sessiontest.WaitFor(t, "leases released", func() bool { return r.stage(StageModel).Leased == 0 })
	if s := r.stage(StageModel); s.Ledger.CancelledActive != 1 {
		t.Fatalf("model stage %+v", s)
	}
}

// TestStreamedBargeInMidSentence: with pacing on a manual clock, a
// barge-in in the middle of the first sentence's audio reports heard up
// to where playback was: the sentence's words cut at the same share.
func TestStreamedBargeInMidSentence(t *testing.T) {
	const q = "read it out"
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	model := newScriptModel(q)
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Clock, c.Pace, c.ModelBackend = clock, true, model
		s.FrameCount = 50 // 1 s a sentence
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	model.write(t, q, "one two three four five six seven eight nine ten.")
	model.write(t, q, " And")
	a.Expect("audio_start")
	sessiontest.WaitFor(t, "the sentence synthesized", func() bool { return r.Synth.Started() == 1 && r.Synth.Running() == 0 })
	readPaced(t, a, clock, r.Engine.cfg.PaceLead, 25) // half of the sentence
	a.Send(map[string]any{"type": "barge_in"})
	in := a.Expect("interrupted")
	if in.Heard == nil || in.Heard.AudioMS != 500 || in.Heard.Text != "one two three four five" {
		t.Fatalf("heard %+v, want half the sentence", in.Heard)
	}
	if end := a.Expect("turn_end"); end.Disposition != "cancelled" || end.Stage != StageSynthesis {
		t.Fatalf("turn_end %+v", end)
	}
}

// TestStreamedLaterSentenceExpires: the caller heard the first sentence;
// the second waits for a synthesis slot held by another call. It is
// useful until the first sentence's audio has played plus the grace, not
// until the turn's birth plus the stage's max wait: it is still queued
// past that, expires exactly at its deadline, and the caller hears that
// the rest of the answer was lost. The model is stopped, its lease
// cancelled and released.
func TestStreamedLaterSentenceExpires(t *testing.T) {
	const q = "long answer please"
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	model, synth := newScriptModel(q), newRecSynth()
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Clock, c.ModelBackend, c.Synthesizer = clock, model, synth
		c.Synthesis = stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Second}
		c.SegmentGrace = 300 * time.Millisecond
	})
	a, b := heardThenHeld(t, r, model, q, StageSynthesis, 1)
	clock.Advance(2 * time.Second) // past the turn's birth + max wait
	model.write(t, q, " Second part.")
	model.write(t, q, " Third")
	a.Until(isDisp(StageSynthesis, "queued", 2))
	// Useful until the first sentence's 100 ms of audio (queued at
	// birth, the clock not yet moved) ran out plus the grace: it was
	// already later than that when the sentence was complete, so its
	// deadline is its own birth plus the grace.
	clock.Advance(300 * time.Millisecond)
	if s := r.stage(StageSynthesis); s.Queued != 1 {
		t.Fatalf("the second sentence expired early: %+v", s)
	}
	clock.Advance(time.Millisecond)
	all := a.Until(sessiontest.IsType("turn_end"))
	if !slices.ContainsFunc(all, isDisp(StageSynthesis, "expired", 2)) {
		t.Fatalf("no expiry of the second sentence: %v", sessiontest.Types(all))
	}
	lostTheRest(t, all, StageSynthesis, stages.Expired)
	model.cancelled(t, r, q)
	if got := synth.said(); !slices.Equal(got, []string{"First part.", "hold on."}) {
		t.Fatalf("synthesized %q", got)
	}
	close(synth.release)
	b.Until(sessiontest.IsType("turn_end"))
}

// TestStreamedFirstSentenceExpired: the first sentence is judged against
// first audio's budget, the turn's birth plus the synthesis stage's max
// wait; a model slower than that gets the refusal's own prompt ("I could
// not get to speaking it"), not "I lost the rest".
func TestStreamedFirstSentenceExpired(t *testing.T) {
	const q = "slow one"
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	model := newScriptModel(q)
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Clock, c.ModelBackend = clock, model
		c.Synthesis = stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Second}
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	model.write(t, q, "Thinking")
	clock.Advance(time.Second + time.Millisecond)
	model.write(t, q, " done.")
	all := a.Until(sessiontest.IsType("turn_end"))
	if !slices.ContainsFunc(all, isDisp(StageSynthesis, "expired", 1)) {
		t.Fatalf("%v", sessiontest.Types(all))
	}
	if p := sessiontest.LastOf(all, "prompt"); p.Text != PromptText(Refusal{Stage: StageSynthesis, Disposition: stages.Expired}) {
		t.Fatalf("prompt %q", p.Text)
	}
	if got := <-model.stopped; got != q {
		t.Fatalf("stopped %q", got)
	}
}

// TestStreamedModelFailsMidReply: a model that fails after the caller
// heard its first sentence: that sentence stands (history), and the
// prompt says the rest was lost while answering.
func TestStreamedModelFailsMidReply(t *testing.T) {
	const q = "and then"
	model := newScriptModel(q)
	model.end = &backend.Error{Kind: backend.KindUnavailable, Backend: "script", Op: "reply", Err: errors.New("connection reset")}
	r := newRig(t, func(c *Config, _ *stub.Settings) { c.ModelBackend = model })
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	model.write(t, q, "Here is the first part.")
	a.Until(sessiontest.IsType("audio_start"))
	model.write(t, q, " And the")
	close(model.scripts[q])
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != wire.TurnFailed || end.Stage != StageModel || end.Error != "unavailable" {
		t.Fatalf("turn_end %+v", end)
	}
	p := sessiontest.LastOf(all, "prompt")
	if want := PromptText(Refusal{Stage: StageModel, Reason: "unavailable", Started: true, Partial: true}); p.Text != want {
		t.Fatalf("prompt %q, want %q", p.Text, want)
	}
	if !slices.ContainsFunc(all, IsAudioEnd) {
		t.Fatalf("the heard part did not play out: %v", sessiontest.Types(all))
	}
	h := model.historyOf(t, a)
	if len(h) != 2 || h[1].Content != "Here is the first part." {
		t.Fatalf("history %+v", h)
	}
}

// heardThenHeld starts a's turn q, whose first sentence is heard, then
// b's, which takes the only slot of stage and holds it (its item seg).
func heardThenHeld(t *testing.T, r *rig, model *scriptModel, q, stage string, seg int) (a, b *sessiontest.Client) {
	t.Helper()
	a = r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": q})
	model.write(t, q, "First part.")
	untilFrames(t, a, 5)
	b = r.Admitted()
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "hold on."})
	b.Until(isDisp(stage, "admitted", seg))
	return a, b
}

// lostTheRest checks the end of a turn whose reply the caller heard part
// of, refused (d) at stage: the prompt says the rest was lost.
func lostTheRest(t *testing.T, all []sessiontest.Msg, stage string, d stages.Disposition) {
	t.Helper()
	p := sessiontest.LastOf(all, "prompt")
	want := PromptText(Refusal{Stage: stage, Disposition: d, Partial: true})
	if p.Text != want || !strings.Contains(p.Text, "lost the rest of my answer") {
		t.Fatalf("prompt %q, want %q", p.Text, want)
	}
	if end := all[len(all)-1]; end.Disposition != d.String() || end.Stage != stage {
		t.Fatalf("turn_end %+v", end)
	}
}

// cancelled checks that the model writing q was stopped, its lease
// cancelled in the stage and released once it returned.
func (m *scriptModel) cancelled(t *testing.T, r *rig, q string) {
	t.Helper()
	if got := <-m.stopped; got != q {
		t.Fatalf("stopped %q", got)
	}
	sessiontest.WaitFor(t, "the model's lease released", func() bool { return r.stage(StageModel).Leased == 0 })
	if s := r.stage(StageModel); s.Ledger.CancelledActive != 1 {
		t.Fatalf("model stage %+v: its cancelled lease", s)
	}
}

// IsAudioEnd matches audio_end.
func IsAudioEnd(m sessiontest.Msg) bool { return m.Type == "audio_end" }

// untilFrames reads until n frames of audio have come.
func untilFrames(t *testing.T, a *sessiontest.Client, n int) {
	t.Helper()
	a.Until(func(m sessiontest.Msg) bool {
		if m.Type == "binary" {
			n--
		}
		return n == 0
	})
}

// TestModelRefusalPromptedWithEstimate: once the model's first-sentence
// pace is measured, model jobs carry a deadline of their own; a turn
// refused or expired at the model still hears its prompt.
func TestModelRefusalPromptedWithEstimate(t *testing.T) {
	const q = "hold the slot"
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	model := newScriptModel(q)
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Clock, c.ModelBackend = clock, model
		c.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 2 * time.Second}
	})
	for range meter.MinSamples {
		r.Engine.firstSentence.Observe(1500*time.Millisecond, r.Engine.cfg.Synthesis.MaxAge)
	}
	if est := r.Counter("frontdoor_model_first_sentence_seconds"); est < 1.5 || est > 2 {
		t.Fatalf("the estimate on /metrics: %v s", est)
	}
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": q})
	a.Until(isDisp(StageModel, "admitted", 0))
	b := r.Admitted()
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "next."})
	b.Until(isDisp(StageModel, "queued", 0))
	// Useful to the model until born + 2 s - the estimate (about 1.5 s):
	// it expires well before the stage's own 2 s.
	clock.Advance(time.Second)
	all := b.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != "expired" || end.Stage != StageModel {
		t.Fatalf("turn_end %+v", end)
	}
	if p := sessiontest.LastOf(all, "prompt"); p.Text != PromptText(Refusal{Stage: StageModel, Disposition: stages.Expired}) {
		t.Fatalf("prompt %q after %v", p.Text, sessiontest.Types(all))
	}
	close(model.scripts[q])
	a.Until(sessiontest.IsType("turn_end"))
}

// TestStreamedReplyBounded: a model that writes on past maxReply has only
// the first maxReply bytes spoken, so the turn's sentence queue is bounded.
func TestStreamedReplyBounded(t *testing.T) {
	const q = "talk forever"
	_, model, synth, a := scriptedTurn(t, q)
	sentence := strings.Repeat("word ", 19) + "end. "
	for range 2 * maxReply / len(sentence) {
		model.write(t, q, sentence)
	}
	close(model.scripts[q])
	a.Until(sessiontest.IsType("turn_end"))
	n := 0
	for _, s := range synth.said() {
		n += len(s) + 1
	}
	if n > maxReply+len(sentence) || n < maxReply/2 {
		t.Fatalf("%d bytes spoken of %d written, want at most about %d", n, 2*maxReply, maxReply)
	}
}
