package session

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages"
)

// What a voice engineer reads about a call (docs/OBSERVABILITY.md): one
// info line per ended turn, the turn latency histograms, and, when a
// TracerProvider is configured, a trace per call (a span for the call, a
// child per turn, and children per stage wait and per lease).
//
// Everything here is driven by hooks of one line in call.go and turn.go,
// placed where the protocol already reports an outcome (a disposition, a
// turn_end), so that what is logged and traced is what the caller was told.
// Times come from the server's Clock, never from package time, so that
// tests on a manual clock see the same figures as the stages do.
//
// Without a TracerProvider no span is built at all (not even a no-op one):
// the hooks on the per-token and per-audio-chunk path are an atomic load,
// and a turn costs its log line and a few histogram observations.

// Span names. Stage spans carry the stage in their name, so a trace view
// reads "frontdoor.wait.model" then "frontdoor.lease.model" at a glance;
// the names stay few (one per stage).
const (
	spanCall  = "frontdoor.call"
	spanTurn  = "frontdoor.turn"
	spanWait  = "frontdoor.wait."  // + stage: queued (or offered) until admitted or refused
	spanLease = "frontdoor.lease." // + stage: admitted until released
)

// Attribute keys: every one has the frontdoor. prefix.
const (
	attrCallID      = attribute.Key("frontdoor.call_id")
	attrTurnID      = attribute.Key("frontdoor.turn_id")
	attrTenant      = attribute.Key("frontdoor.tenant")
	attrGeneration  = attribute.Key("frontdoor.generation")
	attrStage       = attribute.Key("frontdoor.stage")
	attrDisposition = attribute.Key("frontdoor.disposition")
	attrQueued      = attribute.Key("frontdoor.queued")
	attrPosition    = attribute.Key("frontdoor.position")
	attrCancelled   = attribute.Key("frontdoor.cancelled")
	attrLate        = attribute.Key("frontdoor.late")
	attrCleanupMS   = attribute.Key("frontdoor.cleanup_ms")
	attrLeaseLost   = attribute.Key("frontdoor.lease_lost")
	attrError       = attribute.Key("frontdoor.error")
	attrEndReason   = attribute.Key("frontdoor.end_reason")
	attrSpeech      = attribute.Key("frontdoor.speech")
	attrFirstToken  = attribute.Key("frontdoor.first_token_ms")
	attrFirstAudio  = attribute.Key("frontdoor.first_audio_ms")
	attrHeard       = attribute.Key("frontdoor.heard_ms")
	attrEnd         = attribute.Key("frontdoor.end")
	attrTurns       = attribute.Key("frontdoor.turns")
	attrBargeIns    = attribute.Key("frontdoor.barge_ins")
)

// Turn end reasons (the log line's reason, the turn span's
// frontdoor.end_reason): why the turn ended, beyond its disposition.
const (
	reasonReplied     = "replied"      // completed: its reply audio was played out
	reasonEmptyReply  = "empty_reply"  // completed: the model answered nothing to speak
	reasonNoAudio     = "no_audio"     // completed: synthesis returned no audio
	reasonOfferAnswer = "offer_answer" // completed: a spoken answer to an offer, taken by the fallback
	reasonBargeIn     = "barge_in"     // cancelled: the caller spoke over it (its generation rotated)
	reasonCallEnded   = "call_ended"   // cancelled: the call ended (hangup, disconnect, drain, ...)
	reasonCancelled   = "cancelled"    // cancelled otherwise
	reasonRefused     = "refused"      // a stage refused it (overloaded, expired, stale, closed, out-of-order)
	reasonBackend     = "backend_failed"
	reasonLeaseLost   = "lease_lost" // failed: its lease was lost in the fleet store while it ran
)

// observer is the server's part: its tracer (nil: tracing is off) and the
// turn latency histograms, observed once per turn.
type observer struct {
	tracer     trace.Tracer
	wait       *prometheus.HistogramVec
	firstToken prometheus.Histogram
	firstAudio prometheus.Histogram
}

// Buckets in seconds. Queue waits are fine below 10 ms (an idle stage
// admits in microseconds; a busy one in hundreds of ms); first token and
// first audio span what a caller feels as a pause, up to the default
// stage wait of 2 s and beyond.
var (
	waitBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5}
	firstBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
)

func newObserver(tp trace.TracerProvider, reg prometheus.Registerer) *observer {
	o := &observer{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "frontdoor_turn_queue_wait_seconds",
			Help:    "Time a turn waited in a stage (recognize, model, synthesis) from being offered to being admitted.",
			Buckets: waitBuckets}, []string{"stage"}),
		firstToken: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_turn_first_token_seconds",
			Help:    "Time from a turn's birth (the end of the caller's speech, or its receipt less age_ms) to the model's first token.",
			Buckets: firstBuckets}),
		firstAudio: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_turn_first_audio_seconds",
			Help:    "Time from a turn's birth to its first reply audio queued for the caller.",
			Buckets: firstBuckets}),
	}
	reg.MustRegister(o.wait, o.firstToken, o.firstAudio)
	if tp != nil {
		o.tracer = tp.Tracer("github.com/frontdoorhq/frontdoor/session")
	}
	return o
}

// callObs is a call's part. Its spans are set before the call's goroutines
// start (observeStart) or by the goroutine that owns that step (the
// session admission, then the call's end, which waits for it).
type callObs struct {
	span  trace.Span      // nil: not tracing
	ctx   context.Context // carries span: the parent of the call's turns
	start time.Time
	wait  trace.Span         // the session wait, until decided
	lease trace.Span         // the session lease, until released
	refd  stages.Disposition // the session's refusal, noted by refuseSession

	turns, bargeIns atomic.Int64
}

// turnObs is a turn's part, in the turn itself. Each stage's fields are
// touched by one goroutine at a time: the one that runs the turn (admit,
// sendDisposition, finished and endTurn run there, or in converse for a
// turn that never ran), except the model stage's release, reported by the
// model's goroutine (writeReply) while the turn's waits on synthesis; the
// first token and audio may be noted by a backend's goroutine, hence
// atomics.
type turnObs struct {
	span   trace.Span
	ctx    context.Context
	stages [3]stageObs // recognize, model, synthesis

	// Nanoseconds from the turn's birth (at least 1 once noted; 0: not yet).
	firstToken, firstAudio atomic.Int64
}

// stageObs is one stage of one turn: its wait, then its lease.
type stageObs struct {
	offered  time.Time // zero: the turn did not reach this stage
	waited   time.Duration
	decided  bool
	queued   bool // it found the stage full and waited for a place (position > 0)
	position int
	leasing  bool // admitted, lease not yet released
	wait     trace.Span
	lease    trace.Span
	// When tracing: the time (UnixNano on the server's clock) at which the
	// turn's generation was cancelled while the lease was held, 0 if not.
	cancelledAt atomic.Int64
	stopWatch   func() bool
}

func stageIndex(st string) int {
	switch st {
	case StageRecognize:
		return 0
	case StageModel:
		return 1
	case StageSynthesis:
		return 2
	}
	return -1
}

func (c *Call) now() time.Time { return c.s.cfg.Clock.Now() }

// ms is d in milliseconds, to the microsecond: queue waits are often well
// under a millisecond and a rounded 0 would hide them.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// observeStart opens the call's span and its session wait: the call is
// offered to the session stage as it starts (admitSession).
func (c *Call) observeStart(parent context.Context) {
	o := &c.obs
	o.start = c.now()
	tr := c.s.obs.tracer
	if tr == nil {
		return
	}
	attrs := []attribute.KeyValue{attrCallID.String(c.id)}
	if t := tenant.CallerFrom(parent).Tenant; t != "" {
		attrs = append(attrs, attrTenant.String(t))
	}
	o.ctx, o.span = tr.Start(context.Background(), spanCall, trace.WithTimestamp(o.start),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	_, o.wait = tr.Start(o.ctx, spanWait+StageSession, trace.WithTimestamp(o.start),
		trace.WithAttributes(attrCallID.String(c.id), attrStage.String(StageSession)))
}

// observeRefusal notes the session stage's refusal (refuseSession).
func (c *Call) observeRefusal(d stages.Disposition) { c.obs.refd = d }

// observeSession closes the session wait once admitSession returned and,
// when admitted, opens the session lease.
func (c *Call) observeSession(admitted bool) {
	o := &c.obs
	if o.wait == nil {
		return
	}
	d := stages.Admitted
	switch {
	case admitted:
	case o.refd != 0:
		d = o.refd
	default:
		d = stages.Cancelled // the caller left while queued
	}
	now := c.now()
	o.wait.SetAttributes(attrDisposition.String(d.String()))
	o.wait.End(trace.WithTimestamp(now))
	o.wait = nil
	if admitted {
		_, o.lease = c.s.obs.tracer.Start(o.ctx, spanLease+StageSession, trace.WithTimestamp(now),
			trace.WithAttributes(attrCallID.String(c.id), attrStage.String(StageSession)))
	}
}

// observeReleased closes the session lease (end, once it is released).
func (c *Call) observeReleased() {
	o := &c.obs
	if o.lease == nil {
		return
	}
	o.lease.SetAttributes(attrDisposition.String(stages.Completed.String()), attrCancelled.Bool(false))
	o.lease.End(trace.WithTimestamp(c.now()))
	o.lease = nil
}

// observeBargeIn marks a barge-in on the call's span.
func (c *Call) observeBargeIn(gen uint64, cancelled int) {
	c.obs.bargeIns.Add(1)
	if c.obs.span == nil {
		return
	}
	c.obs.span.AddEvent("frontdoor.barge_in", trace.WithTimestamp(c.now()),
		trace.WithAttributes(attrGeneration.Int64(int64(gen)), attribute.Int("frontdoor.cancelled_turns", cancelled)))
}

// observeEnd closes the call's span (end, after its last line). A turn
// left pending when the call stopped (enqueued after the conversation
// stopped taking turns, before the call was marked ended) never ran and
// never got its turn_end; it is reported here as cancelled by the call's
// end, so that the log and the trace still have one end for every turn.
func (c *Call) observeEnd(end string) {
	c.mu.Lock()
	left := append([]*turn(nil), c.pending...)
	c.mu.Unlock()
	for _, t := range left {
		if t != nil && !t.ended.Load() {
			c.observeTurnEnd(t, stages.Cancelled.String(), "", "")
		}
	}
	o := &c.obs
	if o.wait != nil { // the call ended before its admission was decided
		c.observeSession(false)
	}
	c.observeReleased()
	if o.span == nil {
		return
	}
	o.span.SetAttributes(attrEnd.String(end), attrGeneration.Int64(int64(c.gen.Load())),
		attrTurns.Int64(o.turns.Load()), attrBargeIns.Int64(o.bargeIns.Load()))
	o.span.End(trace.WithTimestamp(c.now()))
}

// turnSpan opens t's span once, when tracing: it starts at the turn's
// birth (not before the call's start, for a turn sent with a large age_ms).
func (c *Call) turnSpan(t *turn) {
	o := &t.obs
	if o.span != nil || c.obs.span == nil {
		return
	}
	start := t.born
	if start.Before(c.obs.start) {
		start = c.obs.start
	}
	o.ctx, o.span = c.s.obs.tracer.Start(c.obs.ctx, spanTurn, trace.WithTimestamp(start),
		trace.WithAttributes(attrCallID.String(c.id), attrTurnID.String(t.id),
			attrGeneration.Int64(int64(t.gen)), attrSpeech.Bool(t.speech != nil)))
}

// observeToken notes the turn's first model token. It runs for every
// token: after the first, one atomic load.
func (c *Call) observeToken(t *turn) {
	if t.obs.firstToken.Load() == 0 {
		t.obs.firstToken.CompareAndSwap(0, c.sinceBorn(t))
	}
}

// observeAudio notes the turn's first reply audio, as the synthesizer
// hands it to the call (it is queued for the caller at once and written
// within the pace lead). It runs for every audio chunk: after the first,
// one atomic load.
func (c *Call) observeAudio(t *turn) {
	if t.obs.firstAudio.Load() == 0 {
		t.obs.firstAudio.CompareAndSwap(0, c.sinceBorn(t))
	}
}

func (c *Call) sinceBorn(t *turn) int64 {
	return max(int64(c.now().Sub(t.born)), 1)
}

// observeSubmit notes that t is offered to stage st (admit, before
// Submit): its wait starts.
func (c *Call) observeSubmit(t *turn, st string) {
	i := stageIndex(st)
	if i < 0 {
		return
	}
	so := &t.obs.stages[i]
	// A reply's sentences pass the synthesis stage one after another:
	// each is a wait (and a lease) of its own.
	so.offered, so.decided, so.queued, so.position = c.now(), false, false, 0
	if c.obs.span == nil {
		return
	}
	c.turnSpan(t)
	_, so.wait = c.s.obs.tracer.Start(t.obs.ctx, spanWait+st, trace.WithTimestamp(so.offered),
		trace.WithAttributes(attrCallID.String(c.id), attrTurnID.String(t.id),
			attrGeneration.Int64(int64(t.gen)), attrStage.String(st)))
}

// observeDisposition follows the dispositions a turn's stage reports
// (sendDisposition): queued marks the wait; the next disposition decides
// the wait (admitted opens the lease); once admitted, the next one is the
// lease's release (completed or cancelled, with the failure kind).
func (c *Call) observeDisposition(t *turn, st string, d stages.Disposition, pos int, kind string) {
	i := stageIndex(st)
	if i < 0 {
		return
	}
	so := &t.obs.stages[i]
	switch {
	case so.offered.IsZero():
	case d == stages.Queued && !so.decided:
		// Every queued ticket reports queued, even one admitted at
		// once (position 0): it waited behind others only with a place.
		so.queued, so.position = pos > 0, pos
	case !so.decided:
		c.waitDecided(t, st, so, d)
	case so.leasing:
		c.leaseReleased(t, so, d, kind)
	}
}

func (c *Call) waitDecided(t *turn, st string, so *stageObs, d stages.Disposition) {
	now := c.now()
	so.decided, so.waited = true, now.Sub(so.offered)
	if d == stages.Admitted {
		c.s.obs.wait.WithLabelValues(st).Observe(so.waited.Seconds())
		so.leasing = true
	}
	if so.wait != nil {
		so.wait.SetAttributes(attrDisposition.String(d.String()), attrQueued.Bool(so.queued))
		if so.queued {
			so.wait.SetAttributes(attrPosition.Int(so.position))
		}
		so.wait.End(trace.WithTimestamp(now))
		so.wait = nil
	}
	if d != stages.Admitted || t.obs.ctx == nil {
		return
	}
	_, so.lease = c.s.obs.tracer.Start(t.obs.ctx, spanLease+st, trace.WithTimestamp(now),
		trace.WithAttributes(attrCallID.String(c.id), attrTurnID.String(t.id),
			attrGeneration.Int64(int64(t.gen)), attrStage.String(st)))
	// The lease's cleanup is timed from the cancellation of the turn's
	// generation (a barge-in or the call's end), as the stage times it.
	clock := c.s.cfg.Clock
	so.stopWatch = context.AfterFunc(t.ctx, func() { so.cancelledAt.Store(clock.Now().UnixNano()) })
}

func (c *Call) leaseReleased(t *turn, so *stageObs, d stages.Disposition, kind string) {
	so.leasing = false
	if so.lease == nil {
		return
	}
	now := c.now()
	so.stopWatch()
	cancelled := d == stages.Cancelled || t.ctx.Err() != nil
	attrs := []attribute.KeyValue{attrDisposition.String(d.String()), attrCancelled.Bool(cancelled), attrLate.Bool(false)}
	if at := so.cancelledAt.Load(); at != 0 {
		cleanup := now.Sub(time.Unix(0, at))
		// Late as the stage reports it: the backend took longer than
		// the cleanup timeout to confirm it stopped (the lease was held,
		// and counted overdue, meanwhile).
		attrs[2] = attrLate.Bool(cleanup > c.s.cfg.CleanupTimeout)
		attrs = append(attrs, attrCleanupMS.Float64(ms(cleanup)))
	}
	if kind != "" {
		attrs = append(attrs, attrError.String(kind))
	}
	if t.silenced.Load() {
		attrs = append(attrs, attrLeaseLost.Bool(true))
	}
	so.lease.SetAttributes(attrs...)
	so.lease.End(trace.WithTimestamp(now))
	so.lease = nil
}

// endReason says why t ended, beyond its disposition.
func (c *Call) endReason(t *turn, disposition, st string) string {
	switch disposition {
	case stages.Completed.String():
		switch {
		case st == StageRecognize:
			return reasonOfferAnswer
		case t.synthUS.Load() > 0:
			return reasonReplied
		case !t.obs.stages[2].offered.IsZero():
			return reasonNoAudio
		}
		return reasonEmptyReply
	case stages.Cancelled.String():
		switch {
		case t.gen < c.gen.Load():
			return reasonBargeIn
		case c.ctx.Err() != nil:
			return reasonCallEnded
		}
		return reasonCancelled
	case TurnFailed:
		if t.silenced.Load() {
			return reasonLeaseLost
		}
		return reasonBackend
	}
	return reasonRefused
}

// waitKeys are the log line's queue wait fields, by stage index.
var waitKeys = [3]string{"recognize_wait_ms", "model_wait_ms", "synthesis_wait_ms"}

// observeTurnEnd writes the turn's info line and closes its span
// (endTurn). The line carries identities, outcomes and timings only:
// never the transcript, the reply or anything else the caller said.
func (c *Call) observeTurnEnd(t *turn, disposition, st, kind string) {
	now := c.now()
	c.obs.turns.Add(1)
	reason := c.endReason(t, disposition, st)
	o := &t.obs
	firstToken, firstAudio := time.Duration(o.firstToken.Load()), time.Duration(o.firstAudio.Load())
	if firstToken > 0 {
		c.s.obs.firstToken.Observe(firstToken.Seconds())
	}
	if firstAudio > 0 {
		c.s.obs.firstAudio.Observe(firstAudio.Seconds())
	}
	heard, heardKnown := t.sentUS.Load()/1000, t.synthUS.Load() > 0

	if c.log.Enabled(context.Background(), slog.LevelInfo) {
		attrs := make([]slog.Attr, 0, 14)
		attrs = append(attrs, slog.String("turn", t.id), slog.Uint64("generation", t.gen),
			slog.String("disposition", disposition), slog.String("reason", reason))
		if st != "" {
			attrs = append(attrs, slog.String("stage", st))
		}
		if kind != "" {
			attrs = append(attrs, slog.String("error", kind))
		}
		for i := range o.stages {
			if so := &o.stages[i]; so.decided {
				attrs = append(attrs, slog.Float64(waitKeys[i], ms(so.waited)))
			}
		}
		if firstToken > 0 {
			attrs = append(attrs, slog.Float64("first_token_ms", ms(firstToken)))
		}
		if firstAudio > 0 {
			attrs = append(attrs, slog.Float64("first_audio_ms", ms(firstAudio)))
		}
		if heardKnown {
			attrs = append(attrs, slog.Int64("heard_ms", heard))
		}
		attrs = append(attrs, slog.Float64("turn_ms", ms(now.Sub(t.born))))
		c.log.LogAttrs(context.Background(), slog.LevelInfo, "turn ended", attrs...)
	}

	if c.obs.span == nil {
		return
	}
	c.turnSpan(t)
	for i := range o.stages { // a wait or lease still open has ended with the turn
		so := &o.stages[i]
		if so.wait != nil {
			c.waitDecided(t, stageNames[i], so, stages.Cancelled)
		}
		if so.lease != nil {
			c.leaseReleased(t, so, stages.Cancelled, "")
		}
	}
	attrs := []attribute.KeyValue{attrDisposition.String(disposition), attrEndReason.String(reason)}
	if st != "" {
		attrs = append(attrs, attrStage.String(st))
	}
	if kind != "" {
		attrs = append(attrs, attrError.String(kind))
	}
	if firstToken > 0 {
		attrs = append(attrs, attrFirstToken.Float64(ms(firstToken)))
	}
	if firstAudio > 0 {
		attrs = append(attrs, attrFirstAudio.Float64(ms(firstAudio)))
	}
	if heardKnown {
		attrs = append(attrs, attrHeard.Int64(heard))
	}
	o.span.SetAttributes(attrs...)
	if disposition == TurnFailed {
		o.span.SetStatus(codes.Error, "backend failed: "+kind)
	}
	o.span.End(trace.WithTimestamp(now))
}

var stageNames = [3]string{StageRecognize, StageModel, StageSynthesis}
