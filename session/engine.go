package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/audiolimit"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/heartbeat"
	"github.com/frontdoorhq/frontdoor/session/internal/admission"
	"github.com/frontdoorhq/frontdoor/session/internal/answer"
	"github.com/frontdoorhq/frontdoor/session/internal/meter"
	"github.com/frontdoorhq/frontdoor/session/internal/metrics"
	"github.com/frontdoorhq/frontdoor/session/internal/observe"
	"github.com/frontdoorhq/frontdoor/session/internal/pace"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Config configures an Engine. Zero values take the defaults noted.
type Config struct {
	// Limits of the three stages. A zero Limits takes DefaultSessionLimits,
	// DefaultModelLimits or DefaultSynthesisLimits.
	Session, Model, Synthesis stages.Limits
	// Recognize limits the recognition stage that speech turns pass
	// before the model stage (zero: DefaultRecognizeLimits).
	Recognize stages.Limits
	// CleanupTimeout is how long a cancelled lease may wait for its
	// backend before it is reported overdue (it stays held). 0: 2s.
	CleanupTimeout time.Duration
	// QuarantineAfter quarantines a backend stage (recognize, model,
	// synthesis) whose cleanups exceed CleanupTimeout this many times in a
	// row: it refuses new work `closed` until every overdue cleanup is
	// confirmed (quarantine.go). 0: off.
	QuarantineAfter int

	// Backends. Both are required.
	ModelBackend backend.Model
	Synthesizer  backend.Synthesizer
	// Recognizer turns speech turns into text (nil: speech turns are
	// refused with an error message).
	Recognizer backend.Recognizer
	// Answers hears a caller's spoken answer to an open offer, outside
	// the recognition stage (answer.go): a recognizer of the offer's few
	// answers. nil: answers are heard only in a conversation's turns.
	Answers backend.Recognizer
	// AnswerSlots bounds the answers recognized at once (0:
	// DefaultAnswerSlots).
	AnswerSlots int

	// Logger (nil: discard). Registry (nil: a new one) receives the
	// server's metrics and is served on /metrics.
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// TracerProvider receives a trace per call: a span for the call, a
	// child per turn, and children per stage wait and per lease
	// (package internal/observe). nil: no spans are built at all.
	TracerProvider trace.TracerProvider
	// Clock drives the stages' expiry and every timer of the calls (nil:
	// the system clock).
	Clock clock.Clock
	// NewGate builds each stage's gate (nil: LocalGate, the in-process
	// frontdoor policy). stage is "session", "recognize", "model" or
	// "synthesis". The server closes each gate on its own replica for a
	// drain or a quarantine (stages.Guard), and stops it on Close.
	NewGate func(stage string, l stages.Limits, clock clock.Clock) (stages.Gate, error)
	// StoreTimeout bounds each operation of a call on a stage's gate (a
	// round trip to the store in fleet mode): an offer that takes longer
	// fails closed, and a cleanup (Release, Forget, Cancel) that takes
	// longer is left to the store's lease TTL. 0: 1s.
	StoreTimeout time.Duration
	// Fallback decides what refused callers hear (nil: Prompts).
	Fallback Fallback
	// Ready, when set, is consulted by /readyz: an error (such as a fleet
	// store that cannot be reached, or a backend that fails its health
	// check) turns it 503 with the error's text among its reasons (each of
	// an errors.Join its own).
	Ready func(ctx context.Context) error
	// OnBackend, when set, is told each backend call's outcome in a turn:
	// its stage (StageRecognize, StageModel, StageSynthesis) and nil when
	// the backend finished the work, or its error when it failed (never
	// for cancelled work, nor for a lease lost to the store).
	OnBackend func(stage string, err error)

	// Heartbeat pings every WebSocket (/v1/session, /v1/twilio, the
	// signalling socket of /v1/webrtc) to find dead peers (zero: no
	// pings).
	Heartbeat heartbeat.Config
	// Outbound bounds each call's queue to the caller.
	Outbound OutboundLimits
	// Audio bounds each call's caller audio: frame size and rate.
	Audio audiolimit.Limits
	// Pace releases reply audio in real time (each frame, of 20 ms or the
	// caller's hello.audio.frame_ms, at its time on a clock aligned to the
	// start of the reply), at most PaceLead ahead (0: 60ms),
	// so that a barge-in stops what has not been played yet and the heard
	// estimate follows playback. Off, audio is written as fast as the
	// caller reads it.
	Pace     bool
	PaceLead time.Duration
	// perCallPacing: every writer paces prompt audio on its own timer, as
	// before the shared pacer (package internal/pace); for benchmarks beside it.
	perCallPacing bool
	// SegmentGrace is how long past the end of the audio already queued
	// for a reply its next sentence may still wait for synthesis: the
	// silence a caller may hear between two sentences (0:
	// DefaultSegmentGrace). A reply's first sentence waits, as every
	// stage's work does, at most the synthesis stage's max wait from the
	// turn's birth.
	SegmentGrace time.Duration
	// ShedRate is the shedding rule's rate (shed.go): past this many
	// refusals a second, a refusal offers no fallback. 0: never shed.
	ShedRate float64
	// MaxTurnsInFlight caps a call's running and waiting turns (0: 8).
	MaxTurnsInFlight int
	// QueueUpdate is how often a queued caller hears its new position
	// (0: 1s).
	QueueUpdate time.Duration
	// Tenants caps each tenant's calls at once and turns on every
	// transport (nil: no caps but a Caller's own AllowTurn; tenant.go).
	Tenants tenant.Limits
}

// Default stage limits: a fresh server takes a handful of calls at once and
// keeps turns within a conversational waiting budget.
var (
	DefaultSessionLimits   = stages.Limits{Slots: 100, Waiting: 50, MaxAge: 30 * time.Second}
	DefaultModelLimits     = stages.Limits{Slots: 8, Waiting: 16, MaxAge: 2 * time.Second}
	DefaultSynthesisLimits = stages.Limits{Slots: 8, Waiting: 16, MaxAge: 2 * time.Second}
	DefaultRecognizeLimits = stages.Limits{Slots: 8, Waiting: 16, MaxAge: 2 * time.Second}
)

// Engine is frontdoor's call engine: its stages, the calls in progress, and
// their drain. Transports start calls on it (Run); package session/server
// serves it over HTTP.
type Engine struct {
	cfg Config
	log *slog.Logger
	reg *prometheus.Registry
	m   *metrics.Metrics
	obs *observe.Observer // turn histograms and the tracer

	session, recognize, model, synth *stage
	steps                            []step       // the turn pipeline (pipeline.go)
	ans                              *answer.Gate // spoken answers to offers (answer.go); nil: none
	pacer                            *pace.Pacer  // prompt audio's (nil: not paced)
	shed                             meter.Shed   // the shedding rule's (shed.go)

	mu        sync.Mutex
	extra     []*stage
	calls     map[*Call]struct{}
	byName    map[string]int // calls by view.TransportName; a name stays at 0 once seen (its gauge)
	callsWG   sync.WaitGroup
	draining  atomic.Bool
	inTransit admission.Transit // running turns whose reply is not all offered to synthesis yet
	// firstSentence estimates the model's time to a reply's first
	// sentence, which bounds the model stage's useful wait.
	firstSentence meter.FirstSentence
	closed        bool
}

// New returns an Engine. It starts no goroutine: each call runs in
// goroutines of its own, started by the handler that accepts it (or Run),
// and Drain and Close wait for them.
func New(cfg Config) (*Engine, error) {
	if cfg.ModelBackend == nil || cfg.Synthesizer == nil {
		return nil, errors.New("session: Config needs ModelBackend and Synthesizer")
	}
	if cfg.Session == (stages.Limits{}) {
		cfg.Session = DefaultSessionLimits
	}
	if cfg.Model == (stages.Limits{}) {
		cfg.Model = DefaultModelLimits
	}
	if cfg.Synthesis == (stages.Limits{}) {
		cfg.Synthesis = DefaultSynthesisLimits
	}
	if cfg.Recognize == (stages.Limits{}) {
		cfg.Recognize = DefaultRecognizeLimits
	}
	if cfg.CleanupTimeout <= 0 {
		cfg.CleanupTimeout = 2 * time.Second
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	if cfg.NewGate == nil {
		log := cfg.Logger
		cfg.NewGate = func(name string, l stages.Limits, c clock.Clock) (stages.Gate, error) {
			return LocalGate(l, c, log.With("stage", name))
		}
	}
	if cfg.Fallback == nil {
		cfg.Fallback = Prompts{}
	}
	ans := answer.NewGate(cfg.Answers, cfg.AnswerSlots)
	if cfg.SegmentGrace <= 0 {
		cfg.SegmentGrace = DefaultSegmentGrace
	}
	if cfg.MaxTurnsInFlight <= 0 {
		cfg.MaxTurnsInFlight = 8
	}
	if cfg.PaceLead <= 0 {
		cfg.PaceLead = 60 * time.Millisecond
	}
	if cfg.QueueUpdate <= 0 {
		cfg.QueueUpdate = time.Second
	}
	cfg.Outbound = cfg.Outbound.WithDefaults()
	s := &Engine{cfg: cfg, log: cfg.Logger, reg: cfg.Registry, calls: map[*Call]struct{}{}, byName: map[string]int{}, ans: ans,
		shed: meter.Shed{Rate: cfg.ShedRate}}
	s.m = metrics.New(s.reg)
	if cfg.Pace && !cfg.perCallPacing {
		s.pacer = pace.New(cfg.Clock, media.FrameDuration)
	}
	s.obs = observe.New(cfg.TracerProvider, s.reg, cfg.Clock, cfg.CleanupTimeout, StageSession, [3]string{StageRecognize, StageModel, StageSynthesis})
	s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_model_first_sentence_seconds",
		Help: "The model's measured time from admission to a reply's first sentence (mean + 2 deviations; 0 until 8 turns were measured): the model stage admits a turn only until its Born + the synthesis max wait - this."},
		func() float64 { return s.firstSentence.Estimate().Seconds() }))
	var err error
	mk := func(name string, idx int, l stages.Limits) *stage {
		if err != nil {
			return nil
		}
		var g stages.Gate
		if g, err = cfg.NewGate(name, l, cfg.Clock); err != nil {
			err = fmt.Errorf("session: %s stage: %w", name, err)
			return nil
		}
		return admission.New(g, s.stageConfig(name, idx))
	}
	s.session = mk(StageSession, 0, cfg.Session)
	s.recognize = mk(StageRecognize, 1, cfg.Recognize)
	s.model = mk(StageModel, 2, cfg.Model)
	s.synth = mk(StageSynthesis, 3, cfg.Synthesis)
	if err != nil {
		return nil, err
	}
	s.steps = s.turnSteps()
	metrics.Register(s.reg, scrapeSource{s})
	return s, nil
}

func (s *Engine) stageList() []*stage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]*stage{s.session}, s.turnStages()...), s.extra...)
}

// Clock returns the clock the engine's stages and calls run on
// (Config.Clock), for the transports' own timers.
func (s *Engine) Clock() clock.Clock { return s.cfg.Clock }

// CountProtocolError counts a transport's protocol error of kind code in
// frontdoor_protocol_errors_total, beside the engine's own.
func (s *Engine) CountProtocolError(code string) {
	s.m.ProtocolErrs.WithLabelValues(code).Inc()
}

// Fallback returns what refused callers hear (Config.Fallback), for a
// transport that speaks for it (a keypad menu, prompts without a text
// channel).
func (s *Engine) Fallback() Fallback { return s.cfg.Fallback }

// Synthesizer returns the engine's synthesizer, for a transport that
// renders prompts outside the synthesis stage.
func (s *Engine) Synthesizer() backend.Synthesizer { return s.cfg.Synthesizer }

// Registry returns the server's metrics registry.
func (s *Engine) Registry() *prometheus.Registry { return s.reg }

// Ready reports whether the server admits new calls.
func (s *Engine) Ready() bool { return !s.draining.Load() }

// Readiness is the answer of /readyz: 200 with ready true, or 503 with
// every reason the server should get no new calls (draining, a quarantined
// stage, an unreachable store, a backend failing its health check).
type Readiness struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
}

// Readiness reports whether the server should be sent new calls, and why
// not.
func (s *Engine) Readiness(ctx context.Context) Readiness {
	rd := Readiness{Reasons: []string{}}
	if !s.Ready() {
		rd.Reasons = append(rd.Reasons, "draining")
	}
	if err := admission.Quarantined(s.stageList()); err != nil {
		rd.Reasons = append(rd.Reasons, err.Error())
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					rd.Reasons = append(rd.Reasons, e.Error())
				}
			} else {
				rd.Reasons = append(rd.Reasons, err.Error())
			}
		}
	}
	rd.Ready = len(rd.Reasons) == 0
	return rd
}

// Start starts a call on t that outlives the handler that accepted it:
// the call runs in goroutines of its own (counted, so that Drain and Close
// wait for it), and Start returns at once. A handler that stayed for the
// whole call would keep net/http's request, response and connection state
// (with their buffers) and its own deep stack alive for as long as an idle
// caller holds the line. What the layer in front undoes when the handler
// returns (WithCallEnd) is undone when the call ends instead. ended, when
// set, runs once the call has ended and its backend work has stopped. When
// the engine is closed, Start closes t (1013) and reports false.
//
// ctx's values (the Caller) are the call's; its cancellation is not: a
// request's context ends with its handler.
func (s *Engine) Start(ctx context.Context, t Transport, caps Capabilities, ended func()) bool {
	ctx = context.WithoutCancel(ctx)
	undo := tenant.HoldCallEnd(ctx)
	call := s.newCall(t, caps)
	if call == nil {
		t.Close(wire.CloseTryLater, "server closed")
		undo()
		return false
	}
	call.start(ctx, func() {
		if ended != nil {
			ended()
		}
		s.endCall(call)
		undo()
	})
	return true
}

// Run serves one call on t until it ends and every piece of its backend
// work has stopped. Transports whose handler stays for its call (Twilio,
// WebRTC) call it from that handler, declaring what they can do beyond Transport in caps. It
// closes t.
func (s *Engine) Run(ctx context.Context, t Transport, caps Capabilities) {
	c := s.newCall(t, caps)
	if c == nil {
		t.Close(wire.CloseTryLater, "server closed")
		return
	}
	defer s.endCall(c)
	c.run(ctx)
}

func (s *Engine) newCall(t Transport, caps Capabilities) *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	c := newCall(s, newID(), t, caps)
	s.calls[c] = struct{}{}
	s.byName[view.TransportName(caps.Name)]++
	s.callsWG.Add(1)
	s.m.Sessions.Inc()
	return c
}

func (s *Engine) endCall(c *Call) {
	s.mu.Lock()
	delete(s.calls, c)
	s.byName[view.TransportName(c.caps.Name)]--
	s.mu.Unlock()
	s.m.Sessions.Dec()
	s.callsWG.Done()
}

// Calls returns the number of calls in progress.
func (s *Engine) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// ErrDrainTimeout reports calls still running when the drain deadline came;
// they were told to go away (1001).
var ErrDrainTimeout = errors.New("session: drain timeout: calls ended with 1001")

// Drain closes admission in every stage (new callers get `session` closed
// and /readyz turns 503) and waits for the calls in progress to end. When
// ctx ends first, the remaining calls are told to end (1001) and Drain
// returns ErrDrainTimeout; Close waits for their backend work to stop.
//
// The synthesis stage closes last, once no running turn is still on its way
// to it, so turns already past the model finish with their audio. (A turn
// not yet admitted by the model meets its closed stage.)
func (s *Engine) Drain(ctx context.Context) error {
	s.draining.Store(true)
	for _, st := range s.stageList() {
		if st != s.synth {
			st.Drain()
		}
	}
	done := make(chan struct{})
	go func() { s.callsWG.Wait(); close(done) }()
	// The synthesis stage closes when the last turn in transit hands off
	// (s.inTransit signals each time the count reaches zero) or when the
	// calls are gone, whichever comes first.
	zero := s.inTransit.Zero()
	for s.inTransit.Busy() {
		select {
		case <-zero:
		case <-done:
			s.synth.Drain()
			return nil
		case <-ctx.Done():
			s.synth.Drain()
			s.stopAll()
			return ErrDrainTimeout
		}
	}
	s.synth.Drain()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.stopAll()
	return ErrDrainTimeout
}

// stopAll tells every call in progress to end (1001).
func (s *Engine) stopAll() {
	s.mu.Lock()
	for c := range s.calls {
		c.stop(errGoingAway)
	}
	s.mu.Unlock()
}

// Close refuses new calls, ends the ones in progress (1001), waits for them,
// and stops the stages' timers. Backends are the caller's to close; a
// backend that never confirms its cleanup keeps Close waiting until it is
// closed.
func (s *Engine) Close() {
	s.draining.Store(true)
	s.mu.Lock()
	s.closed = true
	for c := range s.calls {
		c.stop(errGoingAway)
	}
	s.mu.Unlock()
	s.callsWG.Wait()
	for _, st := range s.stageList() {
		st.Stop()
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Gate returns the gate the server submits the named stage's work to, with
// the server's own decorators (drain, quarantine) around what
// Config.NewGate built, or nil for a name it does not run. It is for tests
// and tools that check the stage contract on exactly what the server runs.
func (s *Engine) Gate(name string) stages.Gate {
	for _, st := range []*stage{s.session, s.recognize, s.model, s.synth} {
		if st.Name() == name {
			return st.Gate()
		}
	}
	return nil
}
