package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

// maxReply bounds the reply text a turn keeps (for history and heard).
const maxReply = 16 << 10

// turn is one utterance on its way through the model and synthesis stages.
type turn struct {
	id     string
	seq    uint64
	gen    uint64
	ctx    context.Context // the generation's: cancelled by a barge-in
	born   time.Time
	text   string
	speech *backend.Audio // a speech turn, before recognition
	format media.Format
	span   int             // the call's reply framing (Call.span)
	lost   <-chan struct{} // the lease admit took may be lost (lease.go)
	done   chan struct{}
	ended  atomic.Bool

	played     chan struct{} // closed once its audio_end was written
	silenced   atomic.Bool   // a lease of the turn was lost: its audio is not written
	playedOnce sync.Once

	mu      sync.Mutex
	reply   strings.Builder
	synthUS atomic.Int64 // audio produced by the synthesizer
	sentUS  atomic.Int64 // audio written to the caller

	obs turnObs // its log line and spans (observe.go)
}

func (t *turn) markPlayed() { t.playedOnce.Do(func() { close(t.played) }) }

func (t *turn) appendReply(s string) {
	t.mu.Lock()
	if t.reply.Len()+len(s) <= maxReply {
		t.reply.WriteString(s)
	}
	t.mu.Unlock()
}

func (t *turn) replyText() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reply.String()
}

// heard estimates what of t's reply was sent for playing: the audio written
// and the same share of the reply's words (exact once synthesis finished;
// transports that report playback can do better).
func (t *turn) heard() *Heard {
	sent, made := t.sentUS.Load(), t.synthUS.Load()
	h := &Heard{Turn: t.id, AudioMS: sent / 1000}
	if sent <= 0 || made <= 0 {
		return h
	}
	words := strings.Fields(t.replyText())
	n := int((int64(len(words))*sent + made - 1) / made)
	h.Text = strings.Join(words[:min(n, len(words))], " ")
	return h
}

func (c *Call) jobID(t *turn, stage string) string {
	return fmt.Sprintf("%s/%d/%s", c.id, t.seq, stage)
}

// runTurn takes t through the model and synthesis stages, sending every
// disposition, and ends it with turn_end. It returns once every backend it
// started has returned and every lease it took is released.
func (c *Call) runTurn(t *turn) {
	defer close(t.done)
	first := stages.Job{ID: c.jobID(t, StageModel), Owner: c.id, Generation: t.gen, Born: t.born, Tenant: c.tenant()}
	if t.speech != nil {
		first.ID = c.jobID(t, StageRecognize)
		if !c.recognize(t, first) {
			return
		}
	}
	mjob := first.Next(c.jobID(t, StageModel)) // keeps Born and tenant
	// Until its synthesis job is offered, this turn keeps a drain from
	// closing the synthesis stage under it.
	c.s.inTransit.Add(1)
	var once sync.Once
	handedOff := func() { once.Do(func() { c.s.inTransit.Add(-1) }) }
	defer handedOff()
	if d := c.admit(t, c.s.model, mjob, nil); d != stages.Admitted {
		c.endTurn(t, d.String(), StageModel, "")
		return
	}
	hist := c.history.Messages()
	c.history.Add(backend.Message{Role: backend.RoleUser, Content: t.text})
	disp, err := c.holdLease(t, c.s.model, mjob.ID, func(ctx context.Context) error {
		return c.s.cfg.ModelBackend.Reply(ctx, backend.Turn{Call: c.id, ID: t.id, Text: t.text, History: hist},
			func(delta string) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				t.appendReply(delta)
				c.observeToken(t)
				return c.push(ctx, frame{gen: t.gen, msg: &textMsg{Type: "text", Turn: t.id, Generation: t.gen, Delta: delta}})
			})
	})
	if !c.finished(t, StageModel, disp, err) {
		return
	}
	reply := t.replyText()
	if strings.TrimSpace(reply) == "" {
		c.endTurn(t, stages.Completed.String(), "", "")
		return
	}

	sjob := mjob.Next(c.jobID(t, StageSynthesis)) // keeps Born and tenant
	if d := c.admit(t, c.s.synth, sjob, handedOff); d != stages.Admitted {
		c.endTurn(t, d.String(), StageSynthesis, "")
		return
	}
	a := &audioOut{c: c, t: t, id: t.id, gen: t.gen, format: t.format, span: t.span}
	disp, err = c.holdLease(t, c.s.synth, sjob.ID, func(ctx context.Context) error {
		if err := c.s.cfg.Synthesizer.Synthesize(ctx, reply, func(au backend.Audio) error { c.observeAudio(t); return a.emit(ctx, au) }); err != nil {
			return err
		}
		return a.finish(ctx)
	})
	if !c.finished(t, StageSynthesis, disp, err) {
		return
	}
	if a.started {
		// The turn is over for the caller once its audio is out: a
		// barge-in while it plays (paced) cancels it.
		select {
		case <-t.played:
		case <-t.ctx.Done():
			c.endTurn(t, stages.Cancelled.String(), StageSynthesis, "")
			return
		}
	}
	c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: reply})
	c.endTurn(t, stages.Completed.String(), "", "")
}

// finished reports a stage's outcome after its lease was released, and
// whether the turn goes on.
func (c *Call) finished(t *turn, st string, disp stages.Disposition, err error) bool {
	kind := ""
	cancelled := disp == stages.Cancelled || t.ctx.Err() != nil
	if err != nil && !cancelled {
		kind = string(backend.KindOf(err))
	}
	c.sendDisposition(t, st, disp, 0, kind)
	switch {
	case cancelled:
		c.endTurn(t, stages.Cancelled.String(), st, "")
		return false
	case err != nil:
		c.s.m.backendErrors.WithLabelValues(st, kind).Inc()
		c.log.Warn("backend failed", "stage", st, "turn", t.id, "err", err)
		c.s.backendOutcome(st, err)
		c.s.cfg.Fallback.Refused(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: st, Reason: kind, Started: true}, c)
		c.endTurn(t, TurnFailed, st, kind)
		return false
	}
	c.s.backendOutcome(st, nil)
	return true
}

// backendOutcome tells Config.OnBackend how a backend did, leaving out a
// lease lost to the store (not the backend's doing).
func (s *Engine) backendOutcome(stage string, err error) {
	if s.cfg.OnBackend != nil && !errors.Is(err, ErrLeaseLost) {
		s.cfg.OnBackend(stage, err)
	}
}

// admit offers job to st and waits while it is queued. Every disposition
// reaches the caller; refusals and expiry also get the fallback's prompt.
// A store that cannot take the work (its rotation to the turn's generation
// or the offer itself failed) refuses it closed, with the prompt that says
// the service is unavailable: stale is only ever said of a generation the
// caller really left.
func (c *Call) admit(t *turn, st *stage, job stages.Job, submitted func()) stages.Disposition {
	c.observeSubmit(t, st.name)
	var tk stages.Pending
	d := stages.Closed
	err := c.rotate(t.ctx, st, t.gen)
	if err == nil {
		tk, d, err = st.submit(t.ctx, job)
	}
	if submitted != nil {
		submitted()
	}
	if err != nil {
		if t.ctx.Err() != nil { // a barge-in or the call's end, not the store
			d = stages.Cancelled
		} else {
			c.log.Error("submit", "stage", st.name, "job", job.ID, "err", err)
			d = stages.Closed
		}
	}
	if d == stages.Queued {
		pos, _, _ := tk.Position(t.ctx)
		c.sendDisposition(t, st.name, stages.Queued, pos, "")
		<-tk.Done() // Rotate and Forget resolve it as cancelled
		d, _ = tk.Result()
	}
	c.sendDisposition(t, st.name, d, 0, "")
	if d.Refusal() {
		c.s.cfg.Fallback.Refused(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: st.name, Disposition: d}, c)
	}
	if d == stages.Admitted {
		t.lost = tk.Lost()
	}
	if d == stages.Admitted && t.ctx.Err() != nil {
		// Rotated between admission and now: nothing was started, so the
		// lease is released at once.
		rd, rerr := st.release(t.ctx, job.ID)
		if rerr != nil {
			c.log.Warn("release", "stage", st.name, "job", job.ID, "err", rerr)
			rd = stages.Cancelled
		}
		c.sendDisposition(t, st.name, rd, 0, "")
		return stages.Cancelled
	}
	return d
}

func (c *Call) sendDisposition(t *turn, st string, d stages.Disposition, pos int, kind string) {
	c.observeDisposition(t, st, d, pos, kind)
	_ = c.Send(c.ctx, &dispositionMsg{Type: "disposition", Stage: st, Turn: t.id, Generation: t.gen,
		Disposition: d, Position: pos, Error: kind})
}

func (c *Call) endTurn(t *turn, disposition, st, kind string) {
	t.ended.Store(true)
	c.mu.Lock()
	delete(c.inflight, t.id)
	c.mu.Unlock()
	c.s.m.turns.WithLabelValues(disposition).Inc()
	c.observeTurnEnd(t, disposition, st, kind)
	_ = c.Send(c.ctx, &turnEndMsg{Type: "turn_end", Turn: t.id, Generation: t.gen, Disposition: disposition, Stage: st, Error: kind})
}

// recognize takes a speech turn through the recognition stage; the
// transcript becomes the turn's text. It reports whether the turn goes on.
func (c *Call) recognize(t *turn, job stages.Job) bool {
	if d := c.admit(t, c.s.recognize, job, nil); d != stages.Admitted {
		c.endTurn(t, d.String(), StageRecognize, "")
		return false
	}
	var text string
	disp, err := c.holdLease(t, c.s.recognize, job.ID, func(ctx context.Context) error {
		var err error
		text, err = c.s.cfg.Recognizer.Recognize(ctx, *t.speech)
		return err
	})
	t.speech = nil // the audio is no longer needed
	if !c.finished(t, StageRecognize, disp, err) {
		return false
	}
	t.text = text
	_ = c.push(t.ctx, frame{gen: t.gen, msg: &transcriptMsg{Type: "transcript", Turn: t.id, Generation: t.gen, Text: text}})
	// The transport's menu hears answers in words where it has one; the
	// Fallback otherwise.
	var ev ClientEvent
	var ok bool
	if c.caps.Answer != nil {
		ev, ok = c.caps.Answer(t.ctx, text)
	} else {
		ev, ok = c.s.cfg.Fallback.SpokenAnswer(c.id, text)
	}
	if ok {
		// An answer to an offer goes to the Fallback, as a key would;
		// the model never sees it.
		c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c)
		c.endTurn(t, stages.Completed.String(), StageRecognize, "")
		return false
	}
	return true
}
