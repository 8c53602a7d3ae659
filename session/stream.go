package session

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/segment"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// DefaultSegmentGrace is Config.SegmentGrace's default.
const DefaultSegmentGrace = 500 * time.Millisecond

// A streamed reply. The model writes in a goroutine of its own; each
// sentence it completes is offered to the synthesis stage at once, under
// a lease of its own, and its audio is queued behind the sentence before.
// So the caller hears the first sentence while the rest is being written.
//
// One lease per sentence, not one per reply: a reply that waits for its
// model's next tokens holds no synthesis slot meanwhile, so a slow model
// cannot hold synthesis capacity idle. The sentence that opens the reply
// is admitted against the turn's first-audio budget (Born + the stage's
// max wait, as every stage before it). A later sentence is useful until
// the audio queued before it runs out, plus Config.SegmentGrace: its job
// carries that instant as its Deadline, so it waits for a slot exactly as
// long as the caller would not notice, however long the model took, and
// is refused, truthfully, past it. The caller keeps what was said ("I lost
// the rest of my answer", not "I could not answer").

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

// sentences is the queue between the model's goroutine and the turn's:
// sentences ready for synthesis, in order, and whether the model is done.
// It holds at most the reply's text (the model's adapter bounds it).
type sentences struct {
	mu     sync.Mutex
	ready  []string
	closed bool
	wake   chan struct{} // a token when ready or closed changed
}

func newSentences() *sentences { return &sentences{wake: make(chan struct{}, 1)} }

func (q *sentences) put(s string) {
	q.mu.Lock()
	q.ready = append(q.ready, s)
	q.mu.Unlock()
	q.signal()
}

func (q *sentences) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *sentences) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next waits for the next sentence; false once the model is done and
// every sentence was taken, or when ctx ends.
func (q *sentences) next(ctx context.Context) (string, bool) {
	for {
		q.mu.Lock()
		if len(q.ready) > 0 {
			s := q.ready[0]
			q.ready = q.ready[1:]
			q.mu.Unlock()
			return s, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return "", false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return "", false
		}
	}
}

// modelRun is the model's outcome, set by its goroutine before done closes.
type modelRun struct {
	done chan struct{}
	disp stages.Disposition
	err  error
}

// speak runs the model admitted as mjob (its lease may be lost: lost)
// and speaks its reply sentence by sentence, then ends the turn.
// handedOff is called once the last sentence was offered to synthesis.
func (c *Call) speak(t *turn, mjob stages.Job, lost <-chan struct{}, handedOff func()) {
	mctx, stopModel := context.WithCancel(t.ctx)
	defer stopModel()
	q := newSentences()
	m := &modelRun{done: make(chan struct{})}
	hist := c.history.Messages()
	c.history.Add(backend.Message{Role: backend.RoleUser, Content: t.text})
	go c.writeReply(mctx, t, hist, mjob, lost, q, m) // ends when the model returns; waited for below

	a := &audioOut{c: c, t: t, id: t.id, gen: t.gen, fr: promptaudio.NewFramer(t.format, t.span)}
	n, refused, failed := 0, stages.Disposition(0), ""
	for {
		text, ok := q.next(t.ctx)
		if !ok {
			break
		}
		n++
		job := c.sentenceJob(t, mjob, n, a)
		d, slost := c.admit(t, c.s.synth, job, n)
		if d != stages.Admitted {
			refused = d
			break
		}
		t.startSpoken(text)
		disp, err := c.holdLease(t.ctx, t, c.s.synth, job.ID, slost, func(ctx context.Context) error {
			heard := c.s.synth.FirstSignal() // the adaptive limit's signal: first audio
			return c.s.cfg.Synthesizer.Synthesize(ctx, text, func(au backend.Audio) error { heard(); t.obs.Audio(); return a.emit(ctx, au) })
		})
		t.endSpoken()
		if cancelled, kind := c.reportStage(t, StageSynthesis, n, disp, err); cancelled {
			break
		} else if err != nil {
			failed = kind
			break
		}
	}
	handedOff()
	if refused != 0 || failed != "" {
		c.stopReply(t, mjob, m, stopModel)
	}
	<-m.done
	c.endReply(t, a, n, refused, failed, m)
}

// stopReply stops a model still writing a reply whose rest can no longer
// be spoken: its lease is cancelled in the stage (and stays held until the
// model returns), then its context.
func (c *Call) stopReply(t *turn, mjob stages.Job, m *modelRun, stop context.CancelFunc) {
	select {
	case <-m.done:
		return // it had finished: its lease is released already
	default:
	}
	if _, err := c.s.model.Cancel(t.ctx, mjob.ID); err != nil {
		c.log.Warn("cancel", "stage", StageModel, "job", mjob.ID, "err", err)
	}
	stop()
}

// writeReply runs the model under its lease, sending its text as it
// streams and putting each complete sentence on q; it closes q and m.done
// when the model has returned and its lease is released.
func (c *Call) writeReply(ctx context.Context, t *turn, hist []backend.Message, mjob stages.Job, lost <-chan struct{}, q *sentences, m *modelRun) {
	defer close(m.done)
	defer q.close()
	var split segment.Splitter
	admitted, measured, spoken := c.now(), false, 0
	first := func() { // the first sentence is complete: the model's pace
		if !measured {
			measured = true
			c.s.firstSentence.Observe(c.now().Sub(admitted), c.s.cfg.Synthesis.MaxAge)
		}
	}
	token := c.s.model.FirstSignal() // the adaptive limit's signal: the first token (internal/admission)
	bt := backend.Turn{Call: c.id, ID: t.id, Text: t.text, History: hist}
	m.disp, m.err = c.holdLease(ctx, t, c.s.model, mjob.ID, lost, func(ctx context.Context) error {
		return c.s.cfg.ModelBackend.Reply(ctx, bt, func(delta string) error {
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
			// a model that writes on never grows the turn's queue.
			if spoken += len(delta); spoken > maxReply {
				return nil
			}
			for _, s := range split.Push(delta) {
				first()
				q.put(s)
			}
			return nil
		})
	})
	if m.err == nil && ctx.Err() == nil {
		if rest := split.Flush(); rest != "" {
			first()
			q.put(rest)
		}
	}
	c.reportStage(t, StageModel, 0, m.disp, m.err)
}

// sentenceJob is the synthesis job of the reply's sentence n. The first
// (and any before audio started) keeps the turn's Born: first audio is
// still what the caller waits for. A later one is born now, and useful
// until the audio queued so far has played, plus the grace.
func (c *Call) sentenceJob(t *turn, mjob stages.Job, n int, a *audioOut) stages.Job {
	job := mjob.Next(c.jobID(t, StageSynthesis))
	if n == 1 {
		return job
	}
	job.ID = fmt.Sprintf("%s.%d", job.ID, n)
	if !a.fr.Started() {
		return job
	}
	now := c.now()
	end := a.startedAt.Add(time.Duration(a.synthUS) * time.Microsecond)
	job.Born = now
	job.Deadline = later(end, now).Add(c.s.cfg.SegmentGrace)
	return job
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// endReply ends a turn whose model has returned: its audio finished and
// heard, or the truth about what was lost.
func (c *Call) endReply(t *turn, a *audioOut, n int, refused stages.Disposition, failed string, m *modelRun) {
	st := StageModel
	if n > 0 {
		st = StageSynthesis
	}
	mcancelled := m.disp == stages.Cancelled && refused == 0 && failed == ""
	// Audio of a turn that lost a lease is cut as a barge-in's is
	// (lease.go): what was queued is not played, so it is not "what
	// was said".
	heardSome := a.fr.Started() && !t.silenced.Load()
	switch {
	case t.ctx.Err() != nil || mcancelled:
		c.endTurn(t, stages.Cancelled.String(), st, "")
		return
	case refused != 0 && !heardSome:
		// Nothing was heard: the refusal's own prompt was said (admit).
		c.endTurn(t, refused.String(), StageSynthesis, "")
		return
	case refused != 0:
		c.endPartial(t, a, Refusal{Call: c.id, Turn: t.id, Stage: StageSynthesis, Disposition: refused}, refused.String(), "")
		return
	case failed != "" && !heardSome:
		c.s.refuse(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: StageSynthesis, Reason: failed, Started: true}, c)
		c.endTurn(t, wire.TurnFailed, StageSynthesis, failed)
		return
	case failed != "":
		c.endPartial(t, a, Refusal{Call: c.id, Turn: t.id, Stage: StageSynthesis, Reason: failed, Started: true}, wire.TurnFailed, failed)
		return
	case m.err != nil:
		kind := string(backend.KindOf(m.err))
		if heardSome {
			c.endPartial(t, a, Refusal{Call: c.id, Turn: t.id, Stage: StageModel, Reason: kind, Started: true}, wire.TurnFailed, kind)
			return
		}
		c.s.refuse(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: StageModel, Reason: kind, Started: true}, c)
		c.endTurn(t, wire.TurnFailed, StageModel, kind)
		return
	}
	if !c.finishAudio(t, a) {
		c.endTurn(t, stages.Cancelled.String(), StageSynthesis, "")
		return
	}
	if reply := t.replyText(); strings.TrimSpace(reply) != "" {
		c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: reply})
	}
	c.endTurn(t, stages.Completed.String(), "", "")
}

// endPartial ends a reply the caller heard part of: what was said stands
// (it plays out and is the history's answer), and the prompt for r, marked
// partial, says the rest was lost.
func (c *Call) endPartial(t *turn, a *audioOut, r Refusal, disposition, kind string) {
	r.Partial = true
	heard := c.finishAudio(t, a)
	c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: t.spokenText()})
	if !heard {
		c.endTurn(t, stages.Cancelled.String(), r.Stage, "")
		return
	}
	c.s.refuse(c.ctx, r, c)
	c.endTurn(t, disposition, r.Stage, kind)
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
