package session

import (
	"context"
	"errors"
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

// backendOutcome tells Config.OnBackend how a backend did, leaving out a
// lease lost to the store (not the backend's doing).
func (s *Engine) backendOutcome(stage string, err error) {
	if s.cfg.OnBackend != nil && !errors.Is(err, ErrLeaseLost) {
		s.cfg.OnBackend(stage, err)
	}
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

// endRun is the turn's one exit, once every step of its pipeline has
// returned: its audio finished and heard, or the truth about what was
// lost. A reply the caller heard part of keeps what was said (it plays
// out and is the history's answer), and its prompt, marked partial, says
// the rest was lost. Audio of a turn that lost a lease is cut as a
// barge-in's is (lease.go): it is not "what was said".
func (c *Call) endRun(r *pipeRun) {
	t, a, o := r.t, r.a, r.end
	i := len(r.steps) - 1 // the furthest step that took an item: where a cancel is told
	for i > 0 && r.steps[i].n == 0 {
		i--
	}
	st, disp := r.steps[i].st.Name(), o.disp.String()
	if o.step != nil && o.disp != stages.Cancelled {
		st = o.step.st.Name()
	}
	failed := Refusal{Call: c.id, Turn: t.id, Stage: st, Disposition: o.disp}
	if o.disp == stages.Failed {
		failed, disp = Refusal{Call: c.id, Turn: t.id, Stage: st, Reason: o.kind, Started: true}, wire.TurnFailed
	}
	switch {
	case t.ctx.Err() != nil || o.disp == stages.Cancelled:
		c.endTurn(t, stages.Cancelled.String(), st, "")
	case o.disp == stages.Completed: // the caller answered an offer
		c.endTurn(t, disp, st, "")
	case o.step != nil && a.fr.Started() && !t.silenced.Load():
		failed.Partial = true
		heard := c.finishAudio(t, a)
		c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: t.spokenText()})
		if !heard {
			c.endTurn(t, stages.Cancelled.String(), st, "")
			return
		}
		fallthrough
	case o.step != nil:
		if o.disp == stages.Failed || failed.Partial { // a refusal's own prompt was said (admit)
			c.s.refuse(c.ctx, failed, c)
		}
		c.endTurn(t, disp, st, o.kind)
	case !c.finishAudio(t, a):
		c.endTurn(t, stages.Cancelled.String(), st, "")
	default:
		if reply := t.replyText(); strings.TrimSpace(reply) != "" {
			c.history.Add(backend.Message{Role: backend.RoleAssistant, Content: reply})
		}
		c.endTurn(t, stages.Completed.String(), "", "")
	}
}
