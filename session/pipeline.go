package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/session/internal/promptaudio"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// step is one stage of the turn pipeline.
type step struct {
	st       *stage
	applies  func(*turn) bool // nil: every turn passes it
	segments bool             // its items are a reply's sentences, numbered 1..n in dispositions (else 0)
	// job, when set, adjusts the job of item n (the turn's job's Next).
	job func(x *stepRun, job stages.Job, n int) stages.Job
	// work is one item's backend work under its lease; out takes what it
	// makes, as it comes.
	work func(x *stepRun, ctx context.Context, in string, out func(string)) error
	// then, when set, runs once the work's lease was released and
	// reported, before what the work left (stepRun.rest) is handed on; it
	// may hand on more, or end the turn here, completed (false: the
	// caller answered an offer).
	then func(x *stepRun, out func(string)) bool
}

// turnSteps is the engine's turn pipeline.
func (s *Engine) turnSteps() []step {
	return []step{
		{st: s.recognize, applies: func(t *turn) bool { return t.speech != nil }, work: (*stepRun).recognize, then: (*stepRun).transcript},
		{st: s.model, job: (*stepRun).modelJob, work: (*stepRun).writeReply},
		{st: s.synth, segments: true, job: (*stepRun).sentenceJob, work: (*stepRun).speak},
	}
}

// turnStages are the stages of the turn pipeline, in order.
func (s *Engine) turnStages() (sts []*stage) {
	for _, st := range s.steps {
		sts = append(sts, st.st)
	}
	return sts
}

// pipeRun is one turn's way through the pipeline.
type pipeRun struct {
	t       *turn
	steps   []*stepRun
	job     stages.Job  // the turn's: every step's job is its Next (Born and Tenant kept)
	a       *audioOut   // the reply's audio
	audible atomic.Bool // the reply's audio started: a later refusal's prompt is endRun's, partial
	mu      sync.Mutex
	end     outcome
}

// outcome is how a turn's pipeline ended: at the furthest step that did
// not finish normally (what the caller heard is closest to it; a stop
// before it may be its consequence), with its disposition (Cancelled, a
// refusal, Failed with the backend's error kind, or Completed: the
// caller answered an offer); at its zero, every step finished.
type outcome struct {
	step *stepRun
	disp stages.Disposition
	kind string
}

// stepRun is one step of one turn. Its context ends with the turn's, or
// when a later step halts it.
type stepRun struct {
	step
	c       *Call
	t       *turn
	r       *pipeRun
	i, n    int              // its place; the items it took
	in, out *admission.Inbox // out: the next step's (the last step's is read by none)
	ctx     context.Context
	halt    context.CancelFunc
	cur     atomic.Value // string: the job offered or held, "" between items
	rest    string       // what the work left to hand on once its lease is released
}

// runTurn takes t through the pipeline and ends it with turn_end, once
// every backend it started has returned and every lease it took is
// released. The last step runs on the turn's goroutine, the others on
// goroutines it waits for. Until the last step took its last item, the
// turn keeps a drain from closing the synthesis stage (Engine.Drain).
func (c *Call) runTurn(t *turn) {
	r := &pipeRun{t: t, job: stages.Job{Owner: c.id, Generation: t.gen, Born: t.born, Tenant: c.tenant()},
		a: &audioOut{c: c, t: t, id: t.id, gen: t.gen, fr: promptaudio.NewFramer(t.format, t.span)}}
	in := admission.NewInbox(t.text)
	for _, s := range c.s.steps {
		if s.applies == nil || s.applies(t) {
			x := &stepRun{step: s, c: c, t: t, r: r, i: len(r.steps), in: in, out: admission.NewInbox()}
			x.ctx, x.halt = context.WithCancel(t.ctx)
			r.steps, in = append(r.steps, x), x.out
		}
	}
	last := r.steps[len(r.steps)-1]
	c.s.inTransit.Add(1)
	var wg sync.WaitGroup
	for _, x := range r.steps[:last.i] {
		wg.Go(x.run)
	}
	last.run()
	wg.Wait()
	c.endRun(r)
}

// run is the loop every step runs, item by item, until its inbox is done
// or an item does not complete.
func (x *stepRun) run() {
	defer x.halt()
	for {
		in, ok := x.in.Next(x.ctx)
		if !ok || (x.ctx.Err() != nil && x.t.ctx.Err() == nil) || !x.serve(in) { // halted: take no more
			break
		}
	}
	if x.out.Close(); x.i == len(x.r.steps)-1 {
		x.c.s.inTransit.Add(-1) // the turn has no more to offer to synthesis
	}
}

// serve admits one item, holds its work under the lease and reports it;
// false when the step stops.
func (x *stepRun) serve(in string) bool {
	x.n++
	c, n, seg := x.c, x.n, 0
	job := x.r.job.Next(fmt.Sprintf("%s/%d/%s", c.id, x.t.seq, x.st.Name()))
	if n > 1 {
		job.ID = fmt.Sprintf("%s.%d", job.ID, n)
	}
	if x.job != nil {
		job = x.job(x, job, n)
	}
	if x.segments {
		seg = n
	}
	x.cur.Store(job.ID)
	d, lost := x.admit(job, seg)
	if d != stages.Admitted {
		return x.stop(outcome{disp: d})
	}
	out := x.out.Put
	x.rest = ""
	disp, err := c.holdLease(x.ctx, x.t, x.st, job.ID, lost, func(ctx context.Context) error { return x.work(x, ctx, in, out) })
	x.cur.Store("")
	cancelled, kind := x.report(seg, disp, err)
	switch {
	case cancelled:
		return x.stop(outcome{disp: stages.Cancelled})
	case err != nil:
		return x.stop(outcome{disp: stages.Failed, kind: kind})
	case x.then != nil && !x.then(x, out):
		return x.stop(outcome{disp: stages.Completed})
	case x.rest != "":
		out(x.rest)
	}
	return true
}

// stop records o as the turn's outcome unless x was halted or a later
// step recorded one, and halts the steps before x the way a barge-in
// stops them: each one's job is cancelled in its stage first (a lease
// stays held until its backend returns; a queued job is withdrawn), then
// its context. It returns false: x stops.
func (x *stepRun) stop(o outcome) bool {
	if x.ctx.Err() != nil {
		return false // halted, or the turn is over
	}
	r := x.r
	o.step = x
	r.mu.Lock()
	if r.end.step == nil || r.end.step.i < x.i {
		r.end = o
	}
	r.mu.Unlock()
	for _, u := range r.steps[:x.i] {
		if id, _ := u.cur.Load().(string); id != "" {
			if _, err := u.st.Cancel(x.t.ctx, id); err != nil {
				x.c.log.Warn("cancel", "stage", u.st.Name(), "job", id, "err", err)
			}
		}
		u.halt()
	}
	return false
}

// admit offers job to x's stage and waits while it is queued. Every
// disposition reaches the caller; a refusal also gets the fallback's
// prompt, unless the caller is hearing the reply (audible: endRun says
// the rest was lost). A store that cannot take the work (a failed
// rotation or offer) refuses it closed: stale is only said of a
// generation the caller left. Admitted, it also returns the channel
// closed if the lease is lost (holdLease).
func (x *stepRun) admit(job stages.Job, seg int) (stages.Disposition, <-chan struct{}) {
	c, t, st := x.c, x.t, x.st
	t.obs.Submit(st.Name())
	d, tk, err := st.Offer(t.ctx, &c.rotated[st.Slot()], job, func(pos int) {
		c.sendDisposition(t, st.Name(), seg, stages.Queued, pos, "")
	})
	if err != nil {
		c.log.Error("submit", "stage", st.Name(), "job", job.ID, "err", err)
	}
	c.sendDisposition(t, st.Name(), seg, d, 0, "")
	if d.Refusal() && !x.r.audible.Load() {
		c.s.refuse(c.ctx, Refusal{Call: c.id, Turn: t.id, Stage: st.Name(), Disposition: d}, c)
	}
	if d != stages.Admitted {
		return d, nil
	}
	if x.ctx.Err() != nil { // rotated or halted meanwhile: nothing started, release at once
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

// report sends the disposition of x's released lease, counts and logs a
// backend failure, and says whether the work was cancelled (a halted
// step's was) and, if it failed, its error kind.
func (x *stepRun) report(seg int, disp stages.Disposition, err error) (cancelled bool, kind string) {
	c, st := x.c, x.st.Name()
	cancelled = disp == stages.Cancelled || x.ctx.Err() != nil
	if err != nil && !cancelled {
		kind = string(backend.KindOf(err))
	}
	c.sendDisposition(x.t, st, seg, disp, 0, kind)
	if !cancelled && err != nil {
		c.s.m.BackendErrors.WithLabelValues(st, kind).Inc()
		c.log.Warn("backend failed", "stage", st, "turn", x.t.id, "err", err)
	}
	if !cancelled {
		c.s.backendOutcome(st, err)
	}
	return cancelled, kind
}

// recognize is the recognition step's work: the speech to its text.
func (x *stepRun) recognize(ctx context.Context, _ string, _ func(string)) error {
	text, err := x.c.s.cfg.Recognizer.Recognize(ctx, *x.t.speech)
	x.t.speech, x.t.text = nil, text // the audio is no longer needed
	return err
}

// transcript tells the caller what was heard and hands it to the model,
// unless it answers the call's offer: that goes to the Fallback, as a key
// would, and the model never sees it.
func (x *stepRun) transcript(out func(string)) bool {
	c, t := x.c, x.t
	_ = c.push(t.ctx, frame{gen: t.gen, msg: &wire.TranscriptMsg{Type: "transcript", Turn: t.id, Generation: t.gen, Text: t.text}})
	if ev, ok := c.answerOf(t.ctx, t.text); ok {
		c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c)
		return false
	}
	out(t.text) // even empty: the model answers what was heard
	return true
}
