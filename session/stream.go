package session

import (
	"context"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/ablate"
	"github.com/frontdoorhq/frontdoor/session/segment"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// DefaultSegmentGrace is Config.SegmentGrace's default.
const DefaultSegmentGrace = 500 * time.Millisecond

// A streamed reply: each sentence the model completes goes to synthesis
// at once, under a lease of its own, its audio queued behind the sentence
// before, so the caller hears the first while the rest is being written.
// One lease per sentence, not per reply: a reply waiting for its model's
// next tokens holds no synthesis slot, so a slow model cannot hold
// synthesis idle. The first sentence is admitted against the turn's
// first-audio budget (Born + the stage's max wait); a later one is useful
// until the audio queued before it runs out, plus Config.SegmentGrace,
// its Deadline: it waits exactly as long as the caller would not notice,
// and is refused, truthfully, past it. The caller keeps what was said ("I
// lost the rest of my answer", not "I could not answer").

// spokenSeg is a sentence given to synthesis and the span of the turn's
// synthesized audio it became (toUS < 0 while it is being synthesized).
type spokenSeg struct {
	text         string
	fromUS, toUS int64
}

// heardAt is what of t's reply the caller heard once us of its audio had
// played: every sentence before us whole, the one us stops in cut at the
// same share of its words as of its audio.
func (t *turn) heardAt(us int64) *wire.Heard {
	h := &wire.Heard{Turn: t.id, AudioMS: max(us, 0) / 1000}
	if us <= 0 {
		return h
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var words []string
	for _, s := range t.spoken {
		to := s.toUS
		if to < 0 {
			to = t.synthUS.Load()
		}
		w := strings.Fields(s.text)
		if us >= to {
			words = append(words, w...)
			continue
		}
		if span := to - s.fromUS; span > 0 && us > s.fromUS {
			n := int((int64(len(w))*(us-s.fromUS) + span - 1) / span)
			words = append(words, w[:min(n, len(w))]...)
		}
		break
	}
	h.Text = strings.Join(words, " ")
	return h
}

// startSpoken notes that text goes to synthesis now; endSpoken that its
// audio is complete.
func (t *turn) startSpoken(text string) {
	t.mu.Lock()
	t.spoken = append(t.spoken, spokenSeg{text: text, fromUS: t.synthUS.Load(), toUS: -1})
	t.mu.Unlock()
}

func (t *turn) endSpoken() {
	t.mu.Lock()
	if n := len(t.spoken); n > 0 {
		t.spoken[n-1].toUS = t.synthUS.Load()
	}
	t.mu.Unlock()
}

// spokenText is the sentences given to synthesis, joined.
func (t *turn) spokenText() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := make([]string, len(t.spoken))
	for i, s := range t.spoken {
		parts[i] = s.text
	}
	return strings.Join(parts, " ")
}

// modelJob is the model's job: admitted only while its first sentence,
// at the model's recent pace, can still be spoken in time (modelDeadline).
func (x *stepRun) modelJob(job stages.Job, _ int) stages.Job {
	job.Deadline = x.c.s.modelDeadline(job.Born)
	return job
}

// writeReply is the model step's work: the reply to text, its deltas
// sent as they stream and each complete sentence handed to synthesis.
func (x *stepRun) writeReply(ctx context.Context, text string, out func(string)) error {
	c, t := x.c, x.t
	hist := c.history.Messages()
	c.history.Add(backend.Message{Role: backend.RoleUser, Content: text})
	var split segment.Splitter
	admitted, measured, spoken := c.now(), false, 0
	first := func() { // the first sentence is complete: the model's pace
		if !measured {
			measured = true
			c.s.firstSentence.Observe(c.now().Sub(admitted), c.s.cfg.Synthesis.MaxAge)
		}
	}
	token := x.st.FirstSignal() // the adaptive limit's signal: the first token (internal/admission)
	bt := backend.Turn{Call: c.id, ID: t.id, Text: text, History: hist}
	err := c.s.cfg.ModelBackend.Reply(ctx, bt, func(delta string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.appendReply(delta)
		token()
		t.obs.Token()
		if err := c.push(ctx, frame{gen: t.gen, msg: &wire.TextMsg{Type: "text", Turn: t.id, Generation: t.gen, Delta: delta}}); err != nil {
			return err
		}
		// What is spoken is bounded as the kept reply is (maxReply):
		// a model that writes on never grows the turn's inbox.
		if spoken += len(delta); spoken > maxReply {
			return nil
		}
		for _, s := range split.Push(delta) {
			first()
			out(s)
		}
		return nil
	})
	if rest := split.Flush(); err == nil && ctx.Err() == nil && rest != "" {
		first()
		x.rest = rest // handed on once the lease is released
	}
	return err
}

// sentenceJob is the synthesis job of the reply's sentence n. The first
// (and any before audio started) keeps the turn's Born: first audio is
// still what the caller waits for. A later one is born now, and useful
// until the audio queued so far has played, plus the grace.
func (x *stepRun) sentenceJob(job stages.Job, n int) stages.Job {
	a := x.r.a
	if n == 1 || !a.fr.Started() {
		return job
	}
	job.Born = x.c.now()
	end := a.startedAt.Add(time.Duration(a.synthUS) * time.Microsecond)
	if end.Before(job.Born) {
		end = job.Born
	}
	job.Deadline = end.Add(x.c.s.cfg.SegmentGrace)
	return job
}

// speak is the synthesis step's work: one sentence's audio queued for
// the caller behind the sentences before it.
func (x *stepRun) speak(ctx context.Context, text string, _ func(string)) error {
	t, a := x.t, x.r.a
	t.startSpoken(text)
	defer t.endSpoken()
	heard := x.st.FirstSignal() // the adaptive limit's signal: first audio
	return x.c.s.cfg.Synthesizer.Synthesize(ctx, text, func(au backend.Audio) error {
		heard()
		if ablate.Speak { // (a measurement build only)
			return x.c.t.SendAudio(context.Background(), ablate.Frame)
		}
		t.obs.Audio()
		err := a.emit(ctx, au)
		if a.fr.Started() {
			x.r.audible.Store(true)
		}
		return err
	})
}

// finishAudio queues the rest of the reply's audio and its audio_end and
// waits until they were written (paced: played); false if a barge-in or
// the call's end came first.
func (c *Call) finishAudio(t *turn, a *audioOut) bool {
	if !a.fr.Started() {
		return t.ctx.Err() == nil
	}
	if err := a.finish(t.ctx); err != nil {
		return false
	}
	select {
	case <-t.played:
		return true
	case <-t.ctx.Done():
		return false
	}
}
