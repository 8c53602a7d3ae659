package fallback

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/fallback/booking"
	"github.com/frontdoorhq/frontdoor/fallback/internal/claimq"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/fallback/promptaudio"
	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// Service owns the callback and handoff stages, the callback store, the
// agents' connections and the prompt audio cache. It is safe for
// concurrent use. Close it to stop its timers and goroutines.
type Service struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	store CallbackStore
	own   bool // the store was opened by New and is closed by Close

	cbs callbackQueue // localCallbacks, or fleetCallbacks over cq
	cbq *claimq.Queue // localCallbacks' stage
	cb  callbacks     // localCallbacks' state
	hos handoffQueue  // localHandoffs, or fleetHandoffs over hfq
	hq  *claimq.Queue // localHandoffs' stage
	ho  handoffs      // the callers and agents of this process

	// Fleet mode: the queues are shared by every process and bound
	// themselves; the local stages above then stay empty.
	cq    CallbackQueue // the store, when it is also the queue
	hfq   HandoffQueue
	fleet fleetState

	prompts *promptaudio.Cache

	ctx    context.Context // ends at Close; owns background work
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	failures atomic.Uint64 // fallbacks that failed after being attempted

	counter   BookingCounter // Config.Bookings: package booking
	refusedMu sync.Mutex
	refused   map[string]uint64 // bookings refused, by bound
}

// Option configures a Service.
type Option func(*Service)

// WithStore replaces the SQLite callback store (Config.DataDir is then
// unused). The Service does not close a store it was given.
func WithStore(st CallbackStore) Option { return func(s *Service) { s.store = st } }

// WithHandoffQueue puts handoffs in q, shared by every process of a fleet,
// instead of this process's handoff stage: an agent on any process sees and
// claims every caller's handoff.
func WithHandoffQueue(q HandoffQueue) Option { return func(s *Service) { s.hfq = q } }

// New opens the callback store, re-fills the callback stage from it, and
// starts rendering every fixed prompt in the background with synth (which
// may be nil: PromptAudio then reports ErrNoSynthesizer). log may be nil.
// ctx bounds the start-up work only.
func New(ctx context.Context, cfg Config, synth Synthesizer, log *slog.Logger, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: log.With("component", "fallback"), clock: cfg.Clock}
	if s.clock == nil {
		s.clock = clock.System
	}
	s.counter, s.refused = booking.NewCounter(cfg.Bookings, s.clock), map[string]uint64{}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.cbq, err = claimq.New(cfg.CallbackLimits(), s.clock); err != nil {
		return nil, err
	}
	if s.hq, err = claimq.New(cfg.HandoffLimits(), s.clock); err != nil {
		return nil, err
	}
	if s.store == nil {
		if cfg.DataDir == "" {
			return nil, fmt.Errorf("fallback: -data-dir is empty")
		}
		st, err := OpenSQLite(ctx, cfg.DataDir)
		if err != nil {
			return nil, err
		}
		s.store, s.own = st, true
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.prompts = promptaudio.New(synth, s.log)
	s.cb.init()
	s.ho.init()
	s.cbq.OnExpire = s.callbacksExpired
	s.cbq.ExpiredLocked = s.expireCallbacksLocked
	s.hq.OnExpire = s.handoffsExpired
	s.hq.ExpiredLocked = s.handoffsExpiredLocked
	s.cbs, s.hos = localCallbacks{s}, localHandoffs{s}
	if s.hfq != nil {
		s.hos = fleetHandoffs{s}
	}
	if cq, ok := s.store.(CallbackQueue); ok {
		s.cq, s.cbs = cq, fleetCallbacks{s}
	}
	if err := s.cbs.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if s.cq != nil || s.hfq != nil {
		s.startFleet()
	}
	return s, nil
}

// Close stops the stages' timers, closes agents' connections, waits for
// background work and closes the store New opened. Live handoffs resolve
// as Closed. Accepted callbacks stay in the store for the next start.
func (s *Service) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cbq.Gate().Close()
	s.hq.Gate().Close()
	s.cancel()
	s.prompts.Close()
	s.cbq.Stop()
	s.hq.Stop()
	s.cb.stopTimers()
	s.ho.closeAgents()
	s.hos.close()
	s.ho.mu.Lock()
	for _, st := range s.ho.byRef {
		if st.agent != nil {
			st.agent.send(agentMessage{Type: "resolved", Ref: st.h.Ref, Disposition: stages.Closed})
		}
		s.hq.Cancel(st.job, st.h.Ref)
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Closed})
	}
	s.ho.mu.Unlock()
	s.wg.Wait()
	if s.own {
		return s.store.Close()
	}
	return nil
}

// CallbackStage returns the callback stage's controller, for /v1/stages
// and metrics. Use it only to observe (Snapshot, Waiting) and to Close or
// Reopen admission when draining.
func (s *Service) CallbackStage() *claim.Local { return s.cbq.Gate() }

// HandoffStage returns the handoff stage's controller, as CallbackStage.
func (s *Service) HandoffStage() *claim.Local { return s.hq.Gate() }

// Clock returns the clock of the service's stages and timers.
func (s *Service) Clock() clock.Clock { return s.clock }

// Store returns the callback store.
func (s *Service) Store() CallbackStore { return s.store }

// Available lists the fallbacks that have room right now, in offer order.
// Acceptance checks again: room now is not a reservation.
func (s *Service) Available() []prompt.Kind {
	var out []prompt.Kind
	if s.cbs.room() {
		out = append(out, prompt.KindCallback)
	}
	if s.hos.room() {
		out = append(out, prompt.KindHandoff)
	}
	return out
}

// Stats are the fallback's own counters, beyond the stages' ledgers.
type Stats struct {
	// NotEstablished counts fallbacks that were attempted and failed
	// (a store write that failed), so the caller was told so.
	NotEstablished uint64 `json:"not_established"`
	// AgentsConnected is the number of agents on /v1/agents now.
	AgentsConnected int `json:"agents_connected"`
	// HandoffsReturned counts claimed handoffs an agent abandoned that went
	// back to the queue; HandoffsAbandonedExpired those that expired then.
	HandoffsReturned         uint64 `json:"handoffs_returned"`
	HandoffsAbandonedExpired uint64 `json:"handoffs_abandoned_expired"`
	// LeasesReturned counts callback claims whose lease ran out.
	LeasesReturned uint64 `json:"leases_returned"`
}

// Stats reports the counters.
func (s *Service) Stats() Stats {
	return Stats{
		NotEstablished:           s.failures.Load(),
		AgentsConnected:          s.ho.agentCount(),
		HandoffsReturned:         s.ho.returned.Load(),
		HandoffsAbandonedExpired: s.ho.abandonedExpired.Load(),
		LeasesReturned:           s.cb.leasesReturned.Load(),
	}
}

// Errors for bad requests. The session server answers them with `error`.
var (
	ErrConsent = errors.New("fallback: callback needs consent: true")
	ErrNumber  = errors.New("fallback: callback needs an E.164 number such as +15550123")
	ErrRequest = errors.New("fallback: request needs call and turn")
	// ErrNotEstablished wraps a failure of the fallback itself (the store
	// could not record the callback): the caller must hear prompt.Failed.
	ErrNotEstablished = errors.New("fallback: not established")
	ErrClosed         = errors.New("fallback: service closed")
)

func newRef(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}
