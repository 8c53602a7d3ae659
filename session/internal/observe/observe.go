// Package observe is what a voice engineer reads about a call
// (docs/OBSERVABILITY.md): one info line per ended turn, the turn latency
// histograms, and, with a TracerProvider, a trace per call.
package observe

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/frontdoorhq/frontdoor/stages"
)

// What a voice engineer reads about a call (docs/OBSERVABILITY.md): one
// info line per ended turn, the turn latency histograms, and, when a
// TracerProvider is configured, a trace per call (a span for the call, a
// child per turn, and children per stage wait and per lease).
//
// Everything here is driven by hooks of one line in session's call.go and
// turn.go,
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
	SpanCall  = "frontdoor.call"
	SpanTurn  = "frontdoor.turn"
	SpanWait  = "frontdoor.wait."  // + stage: queued (or offered) until admitted or refused
	SpanLease = "frontdoor.lease." // + stage: admitted until released
)

// Attribute keys: every one has the frontdoor. prefix.
const (
	AttrCallID      = attribute.Key("frontdoor.call_id")
	AttrTurnID      = attribute.Key("frontdoor.turn_id")
	AttrTenant      = attribute.Key("frontdoor.tenant")
	AttrGeneration  = attribute.Key("frontdoor.generation")
	AttrStage       = attribute.Key("frontdoor.stage")
	AttrDisposition = attribute.Key("frontdoor.disposition")
	AttrQueued      = attribute.Key("frontdoor.queued")
	AttrPosition    = attribute.Key("frontdoor.position")
	AttrCancelled   = attribute.Key("frontdoor.cancelled")
	AttrLate        = attribute.Key("frontdoor.late")
	AttrCleanupMS   = attribute.Key("frontdoor.cleanup_ms")
	AttrLeaseLost   = attribute.Key("frontdoor.lease_lost")
	AttrError       = attribute.Key("frontdoor.error")
	AttrEndReason   = attribute.Key("frontdoor.end_reason")
	AttrSpeech      = attribute.Key("frontdoor.speech")
	AttrFirstToken  = attribute.Key("frontdoor.first_token_ms")
	AttrFirstAudio  = attribute.Key("frontdoor.first_audio_ms")
	AttrHeard       = attribute.Key("frontdoor.heard_ms")
	AttrEnd         = attribute.Key("frontdoor.end")
	AttrTurns       = attribute.Key("frontdoor.turns")
	AttrBargeIns    = attribute.Key("frontdoor.barge_ins")
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

// Observer is the server's part: its tracer (nil: tracing is off) and the
// turn latency histograms, observed once per turn.
type Observer struct {
	tracer     trace.Tracer
	wait       *prometheus.HistogramVec
	firstToken prometheus.Histogram
	firstAudio prometheus.Histogram

	clock   clock.Clock
	cleanup time.Duration // the stages' cleanup timeout: a later one is late
	session string        // the session stage's name
	turn    [3]string     // a turn's stages, in order: recognize, model, synthesis
}

// Buckets in seconds. Queue waits are fine below 10 ms (an idle stage
// admits in microseconds; a busy one in hundreds of ms); first token and
// first audio span what a caller feels as a pause, up to the default
// stage wait of 2 s and beyond.
var (
	waitBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5}
	firstBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
)

// New returns the server's observer: its histograms registered on reg,
// tracing on tp (nil: off), times on clock. session and turn name the
// stages: the session stage's, and a turn's (recognize, model,
// synthesis); cleanup is the cleanup timeout a lease's cleanup is late
// past.
func New(tp trace.TracerProvider, reg prometheus.Registerer, clock clock.Clock, cleanup time.Duration, session string, turn [3]string) *Observer {
	o := &Observer{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "frontdoor_turn_queue_wait_seconds",
			Help:    "Time a turn waited in a stage (recognize, model, synthesis) from being offered to being admitted.",
			Buckets: waitBuckets}, []string{"stage"}),
		firstToken: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_turn_first_token_seconds",
			Help:    "Time from a turn's birth (the end of the caller's speech, or its receipt less age_ms) to the model's first token.",
			Buckets: firstBuckets}),
		firstAudio: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_turn_first_audio_seconds",
			Help:    "Time from a turn's birth to its first reply audio queued for the caller.",
			Buckets: firstBuckets}),
		clock: clock, cleanup: cleanup, session: session, turn: turn,
	}
	reg.MustRegister(o.wait, o.firstToken, o.firstAudio)
	if tp != nil {
		o.tracer = tp.Tracer("github.com/frontdoorhq/frontdoor/session")
	}
	return o
}

// Call is a call's part. Its spans are set before the call's goroutines
// start (Start) or by the goroutine that owns that step (the session
// admission, then the call's end, which waits for it).
type Call struct {
	o     *Observer
	id    string
	log   *slog.Logger
	span  trace.Span      // nil: not tracing
	ctx   context.Context // carries span: the parent of the call's turns
	start time.Time
	wait  trace.Span         // the session wait, until decided
	lease trace.Span         // the session lease, until released
	refd  stages.Disposition // the session's refusal, noted by Refusal

	turns, bargeIns atomic.Int64
}

// Turn is a turn's part, in the turn itself. Each stage's fields are
// touched by one goroutine at a time: the one that runs the turn (admit,
// sendDisposition, finished and endTurn run there, or on the call's owner for a
// turn that never ran), except the model stage's release, reported by the
// model's goroutine (writeReply) while the turn's waits on synthesis; the
// first token and audio may be noted by a backend's goroutine, hence
// atomics.
type Turn struct {
	c      *Call
	id     string
	gen    uint64
	born   time.Time
	speech bool
	work   context.Context // the turn's generation: cancelled by a barge-in or the call's end
	lost   *atomic.Bool    // a lease of the turn was lost

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

func (o *Observer) stageIndex(st string) int {
	for i, n := range o.turn {
		if st == n {
			return i
		}
	}
	return -1
}

func (c *Call) now() time.Time { return c.o.clock.Now() }

// ms is d in milliseconds, to the microsecond: queue waits are often well
// under a millisecond and a rounded 0 would hide them.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Start opens the call's span and its session wait: the call is offered
// to the session stage as it starts (admitSession). tenant is the
// caller's ("" for none).
func (c *Call) Start(o *Observer, id, tenant string, log *slog.Logger) {
	c.o, c.id, c.log = o, id, log
	c.start = c.now()
	tr := o.tracer
	if tr == nil {
		return
	}
	attrs := []attribute.KeyValue{AttrCallID.String(c.id)}
	if tenant != "" {
		attrs = append(attrs, AttrTenant.String(tenant))
	}
	c.ctx, c.span = tr.Start(context.Background(), SpanCall, trace.WithTimestamp(c.start),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	_, c.wait = tr.Start(c.ctx, SpanWait+o.session, trace.WithTimestamp(c.start),
		trace.WithAttributes(AttrCallID.String(c.id), AttrStage.String(o.session)))
}

// Refusal notes the session stage's refusal (refuseSession).
func (c *Call) Refusal(d stages.Disposition) { c.refd = d }

// Session closes the session wait once admitSession returned and, when
// admitted, opens the session lease.
func (c *Call) Session(admitted bool) {
	if c.wait == nil {
		return
	}
	d := stages.Admitted
	switch {
	case admitted:
	case c.refd != 0:
		d = c.refd
	default:
		d = stages.Cancelled // the caller left while queued
	}
	now := c.now()
	c.wait.SetAttributes(AttrDisposition.String(d.String()))
	c.wait.End(trace.WithTimestamp(now))
	c.wait = nil
	if admitted {
		_, c.lease = c.o.tracer.Start(c.ctx, SpanLease+c.o.session, trace.WithTimestamp(now),
			trace.WithAttributes(AttrCallID.String(c.id), AttrStage.String(c.o.session)))
	}
}

// Released closes the session lease (end, once it is released).
func (c *Call) Released() {
	if c.lease == nil {
		return
	}
	c.lease.SetAttributes(AttrDisposition.String(stages.Completed.String()), AttrCancelled.Bool(false))
	c.lease.End(trace.WithTimestamp(c.now()))
	c.lease = nil
}

// BargeIn marks a barge-in on the call's span.
func (c *Call) BargeIn(gen uint64, cancelled int) {
	c.bargeIns.Add(1)
	if c.span == nil {
		return
	}
	c.span.AddEvent("frontdoor.barge_in", trace.WithTimestamp(c.now()),
		trace.WithAttributes(AttrGeneration.Int64(int64(gen)), attribute.Int("frontdoor.cancelled_turns", cancelled)))
}

// End closes the call's span (end, after its last line and the ends of
// the turns left pending), gen its last generation.
func (c *Call) End(end string, gen uint64) {
	if c.wait != nil { // the call ended before its admission was decided
		c.Session(false)
	}
	c.Released()
	if c.span == nil {
		return
	}
	c.span.SetAttributes(AttrEnd.String(end), AttrGeneration.Int64(int64(gen)),
		AttrTurns.Int64(c.turns.Load()), AttrBargeIns.Int64(c.bargeIns.Load()))
	c.span.End(trace.WithTimestamp(c.now()))
}

// Init makes t a turn of call c: its id and generation, its birth, whether
// it is a speech turn, the context of its generation and its lease-lost
// flag.
func (t *Turn) Init(c *Call, id string, gen uint64, born time.Time, speech bool, work context.Context, lost *atomic.Bool) {
	t.c, t.id, t.gen, t.born, t.speech, t.work, t.lost = c, id, gen, born, speech, work, lost
}

// startSpan opens t's span once, when tracing: it starts at the turn's
// birth (not before the call's start, for a turn sent with a large age_ms).
func (t *Turn) startSpan() {
	c := t.c
	if t.span != nil || c.span == nil {
		return
	}
	start := t.born
	if start.Before(c.start) {
		start = c.start
	}
	t.ctx, t.span = c.o.tracer.Start(c.ctx, SpanTurn, trace.WithTimestamp(start),
		trace.WithAttributes(AttrCallID.String(c.id), AttrTurnID.String(t.id),
			AttrGeneration.Int64(int64(t.gen)), AttrSpeech.Bool(t.speech)))
}

// Token notes the turn's first model token. It runs for every token:
// after the first, one atomic load.
func (t *Turn) Token() {
	if t.firstToken.Load() == 0 {
		t.firstToken.CompareAndSwap(0, t.sinceBorn())
	}
}

// Audio notes the turn's first reply audio, as the synthesizer hands it
// to the call (it is queued for the caller at once and written within the
// pace lead). It runs for every audio chunk: after the first, one atomic
// load.
func (t *Turn) Audio() {
	if t.firstAudio.Load() == 0 {
		t.firstAudio.CompareAndSwap(0, t.sinceBorn())
	}
}

// Noted reports whether the first token and the first audio were noted
// (tests).
func (t *Turn) Noted() bool { return t.firstToken.Load() > 0 && t.firstAudio.Load() > 0 }

func (t *Turn) sinceBorn() int64 {
	return max(int64(t.c.now().Sub(t.born)), 1)
}

// Submit notes that t is offered to stage st (admit, before Submit): its
// wait starts.
func (t *Turn) Submit(st string) {
	c := t.c
	i := c.o.stageIndex(st)
	if i < 0 {
		return
	}
	so := &t.stages[i]
	// A reply's sentences pass the synthesis stage one after another:
	// each is a wait (and a lease) of its own.
	so.offered, so.decided, so.queued, so.position = c.now(), false, false, 0
	if c.span == nil {
		return
	}
	t.startSpan()
	_, so.wait = c.o.tracer.Start(t.ctx, SpanWait+st, trace.WithTimestamp(so.offered),
		trace.WithAttributes(AttrCallID.String(c.id), AttrTurnID.String(t.id),
			AttrGeneration.Int64(int64(t.gen)), AttrStage.String(st)))
}

// Disposition follows the dispositions a turn's stage reports
// (sendDisposition): queued marks the wait; the next disposition decides
// the wait (admitted opens the lease); once admitted, the next one is the
// lease's release (completed or cancelled, with the failure kind).
func (t *Turn) Disposition(st string, d stages.Disposition, pos int, kind string) {
	i := t.c.o.stageIndex(st)
	if i < 0 {
		return
	}
	so := &t.stages[i]
	switch {
	case so.offered.IsZero():
	case d == stages.Queued && !so.decided:
		// Every queued ticket reports queued, even one admitted at
		// once (position 0): it waited behind others only with a place.
		so.queued, so.position = pos > 0, pos
	case !so.decided:
		t.waitDecided(st, so, d)
	case so.leasing:
		t.leaseReleased(so, d, kind)
	}
}

func (t *Turn) waitDecided(st string, so *stageObs, d stages.Disposition) {
	c := t.c
	now := c.now()
	so.decided, so.waited = true, now.Sub(so.offered)
	if d == stages.Admitted {
		c.o.wait.WithLabelValues(st).Observe(so.waited.Seconds())
		so.leasing = true
	}
	if so.wait != nil {
		so.wait.SetAttributes(AttrDisposition.String(d.String()), AttrQueued.Bool(so.queued))
		if so.queued {
			so.wait.SetAttributes(AttrPosition.Int(so.position))
		}
		so.wait.End(trace.WithTimestamp(now))
		so.wait = nil
	}
	if d != stages.Admitted || t.ctx == nil {
		return
	}
	_, so.lease = c.o.tracer.Start(t.ctx, SpanLease+st, trace.WithTimestamp(now),
		trace.WithAttributes(AttrCallID.String(c.id), AttrTurnID.String(t.id),
			AttrGeneration.Int64(int64(t.gen)), AttrStage.String(st)))
	// The lease's cleanup is timed from the cancellation of the turn's
	// generation (a barge-in or the call's end), as the stage times it.
	clock := c.o.clock
	so.stopWatch = context.AfterFunc(t.work, func() { so.cancelledAt.Store(clock.Now().UnixNano()) })
}

func (t *Turn) leaseReleased(so *stageObs, d stages.Disposition, kind string) {
	so.leasing = false
	if so.lease == nil {
		return
	}
	now := t.c.now()
	so.stopWatch()
	cancelled := d == stages.Cancelled || t.work.Err() != nil
	attrs := []attribute.KeyValue{AttrDisposition.String(d.String()), AttrCancelled.Bool(cancelled), AttrLate.Bool(false)}
	if at := so.cancelledAt.Load(); at != 0 {
		cleanup := now.Sub(time.Unix(0, at))
		// Late as the stage reports it: the backend took longer than
		// the cleanup timeout to confirm it stopped (the lease was held,
		// and counted overdue, meanwhile).
		attrs[2] = AttrLate.Bool(cleanup > t.c.o.cleanup)
		attrs = append(attrs, AttrCleanupMS.Float64(ms(cleanup)))
	}
	if kind != "" {
		attrs = append(attrs, AttrError.String(kind))
	}
	if t.lost.Load() {
		attrs = append(attrs, AttrLeaseLost.Bool(true))
	}
	so.lease.SetAttributes(attrs...)
	so.lease.End(trace.WithTimestamp(now))
	so.lease = nil
}

// TurnEnd is how a turn ended, as its turn_end told the caller, and what
// the call knows of why.
type TurnEnd struct {
	Disposition string // the turn_end's disposition
	Stage       string // where it ended ("" when it completed)
	Kind        string // a backend failure's kind
	Failed      bool   // Disposition is the failure of a backend
	BargedIn    bool   // its generation is older than the call's
	CallEnded   bool   // the call ended (hangup, disconnect, drain, ...)
	SynthUS     int64  // reply audio the synthesizer produced
	SentUS      int64  // reply audio written to the caller
}

// reason says why t ended, beyond its disposition.
func (t *Turn) reason(e TurnEnd) string {
	switch {
	case e.Disposition == stages.Completed.String():
		switch {
		case e.Stage == t.c.o.turn[0]:
			return reasonOfferAnswer
		case e.SynthUS > 0:
			return reasonReplied
		case !t.stages[2].offered.IsZero():
			return reasonNoAudio
		}
		return reasonEmptyReply
	case e.Disposition == stages.Cancelled.String():
		switch {
		case e.BargedIn:
			return reasonBargeIn
		case e.CallEnded:
			return reasonCallEnded
		}
		return reasonCancelled
	case e.Failed:
		if t.lost.Load() {
			return reasonLeaseLost
		}
		return reasonBackend
	}
	return reasonRefused
}

// waitKeys are the log line's queue wait fields, by stage index.
var waitKeys = [3]string{"recognize_wait_ms", "model_wait_ms", "synthesis_wait_ms"}

// End writes the turn's info line and closes its span (endTurn). The
// line carries identities, outcomes and timings only: never the
// transcript, the reply or anything else the caller said.
func (t *Turn) End(e TurnEnd) {
	c := t.c
	now := c.now()
	c.turns.Add(1)
	reason := t.reason(e)
	disposition, st, kind := e.Disposition, e.Stage, e.Kind
	firstToken, firstAudio := time.Duration(t.firstToken.Load()), time.Duration(t.firstAudio.Load())
	if firstToken > 0 {
		c.o.firstToken.Observe(firstToken.Seconds())
	}
	if firstAudio > 0 {
		c.o.firstAudio.Observe(firstAudio.Seconds())
	}
	heard, heardKnown := e.SentUS/1000, e.SynthUS > 0

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
		for i := range t.stages {
			if so := &t.stages[i]; so.decided {
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

	if c.span == nil {
		return
	}
	t.startSpan()
	for i := range t.stages { // a wait or lease still open has ended with the turn
		so := &t.stages[i]
		if so.wait != nil {
			t.waitDecided(c.o.turn[i], so, stages.Cancelled)
		}
		if so.lease != nil {
			t.leaseReleased(so, stages.Cancelled, "")
		}
	}
	attrs := []attribute.KeyValue{AttrDisposition.String(disposition), AttrEndReason.String(reason)}
	if st != "" {
		attrs = append(attrs, AttrStage.String(st))
	}
	if kind != "" {
		attrs = append(attrs, AttrError.String(kind))
	}
	if firstToken > 0 {
		attrs = append(attrs, AttrFirstToken.Float64(ms(firstToken)))
	}
	if firstAudio > 0 {
		attrs = append(attrs, AttrFirstAudio.Float64(ms(firstAudio)))
	}
	if heardKnown {
		attrs = append(attrs, AttrHeard.Int64(heard))
	}
	t.span.SetAttributes(attrs...)
	if e.Failed {
		t.span.SetStatus(codes.Error, "backend failed: "+kind)
	}
	t.span.End(trace.WithTimestamp(now))
}
