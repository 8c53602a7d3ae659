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
	"github.com/frontdoorhq/frontdoor/session/internal/observe"
	"github.com/frontdoorhq/frontdoor/session/wire"
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
	span   int  // the call's reply framing (replyFormat.span)
	ended  bool // its end was posted to the owner (owner.go: the owner's alone)

	played     chan struct{} // closed once its audio_end was written
	silenced   atomic.Bool   // a lease of the turn was lost: its audio is not written
	playedOnce sync.Once

	mu      sync.Mutex
	reply   strings.Builder
	spoken  []spokenSeg  // the sentences given to synthesis, in order (stream.go)
	synthUS atomic.Int64 // audio produced by the synthesizer
	sentUS  atomic.Int64 // audio written to the caller

	obs observe.Turn // its log line and spans (package internal/observe)
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

// heard estimates what of t's reply was sent for playing: the audio
// written, and the words of each sentence synthesized before it, the
// sentence it stopped in cut at the same share of its audio (transports
// that report playback can do better: heardUpTo).
func (t *turn) heard() *wire.Heard { return t.heardAt(t.sentUS.Load()) }

func (c *Call) jobID(t *turn, stage string) string {
	return fmt.Sprintf("%s/%d/%s", c.id, t.seq, stage)
}

// runTurn takes t through recognition (a speech turn), the model and
// synthesis, sending every disposition, and ends it with turn_end. The
// reply streams: each sentence is offered to the synthesis stage as soon
// as the model has written it (stream.go). It returns once every backend
// it started has returned and every lease it took is released.
func (c *Call) runTurn(t *turn) {
	first := stages.Job{ID: c.jobID(t, StageModel), Owner: c.id, Generation: t.gen, Born: t.born, Tenant: c.tenant()}
	if t.speech != nil {
		first.ID = c.jobID(t, StageRecognize)
		if !c.recognize(t, first) {
			return
		}
	}
	mjob := first.Next(c.jobID(t, StageModel)) // keeps Born and tenant
	mjob.Deadline = c.s.modelDeadline(mjob.Born)
	// Until its last sentence is offered to synthesis, this turn keeps a
	// drain from closing the synthesis stage under it.
	c.s.inTransit.Add(1)
	var once sync.Once
	handedOff := func() { once.Do(func() { c.s.inTransit.Add(-1) }) }
	defer handedOff()
	d, lost := c.admit(t, c.s.model, mjob, 0)
	if d != stages.Admitted {
		c.endTurn(t, d.String(), StageModel, "")
		return
	}
	c.speak(t, mjob, lost, handedOff)
}

// finished reports a stage's outcome after its lease was released, and
// whether the turn goes on.
func (c *Call) finished(t *turn, st string, disp stages.Disposition, err error) bool {
	cancelled, kind := c.reportStage(t, st, 0, disp, err)
	switch {
	case cancelled:
		c.endTurn(t, stages.Cancelled.String(), st, "")
		return false
	case err != nil:
		c.s.refuse(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: st, Reason: kind, Started: true}, c)
		c.endTurn(t, wire.TurnFailed, st, kind)
		return false
	}
	return true
}

// reportStage sends the disposition of a stage's released lease (of
// segment seg of a reply, 0 for other stages), counts and logs a backend
// failure, and says whether the work was cancelled and, if it failed,
// its error kind.
func (c *Call) reportStage(t *turn, st string, seg int, disp stages.Disposition, err error) (cancelled bool, kind string) {
	cancelled = disp == stages.Cancelled || t.ctx.Err() != nil
	if err != nil && !cancelled {
		kind = string(backend.KindOf(err))
	}
	c.sendDisposition(t, st, seg, disp, 0, kind)
	switch {
	case cancelled:
	case err != nil:
		c.s.m.BackendErrors.WithLabelValues(st, kind).Inc()
		c.log.Warn("backend failed", "stage", st, "turn", t.id, "err", err)
		c.s.backendOutcome(st, err)
	default:
		c.s.backendOutcome(st, nil)
	}
	return cancelled, kind
}

// backendOutcome tells Config.OnBackend how a backend did, leaving out a
// lease lost to the store (not the backend's doing).
func (s *Engine) backendOutcome(stage string, err error) {
	if s.cfg.OnBackend != nil && !errors.Is(err, ErrLeaseLost) {
		s.cfg.OnBackend(stage, err)
	}
}

// admit offers job to st and waits while it is queued. Every disposition
// reaches the caller; refusals and expiry also get the fallback's prompt,
// except a later sentence of a reply the caller is hearing (seg > 1 with
// a Deadline), whose prompt says the rest was lost (endPartial). A store that cannot take the work (its rotation to the
// turn's generation or the offer itself failed) refuses it closed, with
// the prompt that says the service is unavailable: stale is only ever
// said of a generation the caller really left. seg numbers a reply's
// sentences at the synthesis stage (0 elsewhere). Admitted, it also
// returns the channel closed if the lease is lost (holdLease).
func (c *Call) admit(t *turn, st *stage, job stages.Job, seg int) (stages.Disposition, <-chan struct{}) {
	t.obs.Submit(st.Name())
	d, tk, err := st.Offer(t.ctx, &c.rotated[st.Slot()], job, func(pos int) {
		c.sendDisposition(t, st.Name(), seg, stages.Queued, pos, "")
	})
	if err != nil {
		c.log.Error("submit", "stage", st.Name(), "job", job.ID, "err", err)
	}
	c.sendDisposition(t, st.Name(), seg, d, 0, "")
	// A later sentence of a reply the caller is hearing has its prompt
	// said by endPartial, once the audio before it has played.
	hearing := seg > 1 && !job.Deadline.IsZero()
	if d.Refusal() && !hearing {
		c.s.refuse(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: st.Name(), Disposition: d}, c)
	}
	if d != stages.Admitted {
		return d, nil
	}
	if t.ctx.Err() != nil {
		// Rotated between admission and now: nothing was started, so the
		// lease is released at once.
		rd, rerr := st.Release(t.ctx, job.ID)
		if rerr != nil {
			c.log.Warn("release", "stage", st.Name(), "job", job.ID, "err", rerr)
			rd = stages.Cancelled
		}
		c.sendDisposition(t, st.Name(), seg, rd, 0, "")
		return stages.Cancelled, nil
	}
	return d, tk.Lost()
}

func (c *Call) sendDisposition(t *turn, st string, seg int, d stages.Disposition, pos int, kind string) {
	t.obs.Disposition(st, d, pos, kind)
	_ = c.Send(c.ctx, &wire.DispositionMsg{Type: "disposition", Stage: st, Turn: t.id, Generation: t.gen,
		Segment: seg, Disposition: d, Position: pos, Error: kind})
}

// endTurn ends t from its goroutine: the owner learns it first (the turn
// is no longer in flight: the caller may reuse its id once told), then
// the caller is told.
func (c *Call) endTurn(t *turn, disposition, st, kind string) {
	c.post(event{kind: evTurnEnded, turn: t})
	c.reportTurnEnd(t, disposition, st, kind)
}

// reportTurnEnd counts and logs t's end and queues its turn_end.
func (c *Call) reportTurnEnd(t *turn, disposition, st, kind string) {
	c.s.m.Turns.WithLabelValues(disposition).Inc()
	c.observeTurnEnd(t, disposition, st, kind)
	_ = c.Send(c.ctx, &wire.TurnEndMsg{Type: "turn_end", Turn: t.id, Generation: t.gen, Disposition: disposition, Stage: st, Error: kind})
}

// recognize takes a speech turn through the recognition stage; the
// transcript becomes the turn's text. It reports whether the turn goes on.
func (c *Call) recognize(t *turn, job stages.Job) bool {
	d, lost := c.admit(t, c.s.recognize, job, 0)
	if d != stages.Admitted {
		c.endTurn(t, d.String(), StageRecognize, "")
		return false
	}
	var text string
	disp, err := c.holdLease(t.ctx, t, c.s.recognize, job.ID, lost, func(ctx context.Context) error {
		var err error
		text, err = c.s.cfg.Recognizer.Recognize(ctx, *t.speech)
		return err
	})
	t.speech = nil // the audio is no longer needed
	if !c.finished(t, StageRecognize, disp, err) {
		return false
	}
	t.text = text
	_ = c.push(t.ctx, frame{gen: t.gen, msg: &wire.TranscriptMsg{Type: "transcript", Turn: t.id, Generation: t.gen, Text: text}})
	if ev, ok := c.answerOf(t.ctx, text); ok {
		// An answer to an offer goes to the Fallback, as a key would;
		// the model never sees it.
		c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c)
		c.endTurn(t, stages.Completed.String(), StageRecognize, "")
		return false
	}
	return true
}
