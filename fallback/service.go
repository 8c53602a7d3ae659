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
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/fallback/promptaudio"
	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Service owns the callback and handoff stages, the callback store, the
// agents' connections and the prompt audio cache. It is safe for
// concurrent use. Close it to stop its timers and goroutines.
type Service struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	store CallbackStore // as given (WithStore) or opened by New
	own   bool          // the store was opened by New and is closed by Close

	// The two queues, each one contract (queue.go) in both modes: this
	// process's claim gates by default, the fleet's when given.
	cq CallbackQueue // the store itself, or a gate in front of it
	hq HandoffQueue
	ho handoffs // the callers and agents of this process

	republished uint64 // callbacks a fleet's store put back, as last logged (loop's only)
	// touches wakes the loop to read the queues again at once after this
	// process changed one (an offer, a claim, an outcome): a fleet's Room
	// is then what this process just did, not up to a poll old.
	touches chan struct{}

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
// unused). The Service does not close a store it was given. A store that
// is also a CallbackQueue (redisqueue.CallbackStore) is the callback queue;
// in front of any other the Service puts this process's claim gate.
func WithStore(st CallbackStore) Option { return func(s *Service) { s.store = st } }

// WithHandoffQueue puts handoffs in q, shared by every process of a fleet
// (redisqueue.HandoffQueue), instead of this process's claim gate: an agent
// on any process sees and claims every caller's handoff.
func WithHandoffQueue(q HandoffQueue) Option { return func(s *Service) { s.hq = q } }

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
	s := &Service{cfg: cfg, log: log.With("component", "fallback"), clock: cfg.Clock, touches: make(chan struct{}, 1)}
	if s.clock == nil {
		s.clock = clock.System
	}
	s.counter, s.refused = booking.NewCounter(cfg.Bookings, s.clock), map[string]uint64{}
	for _, o := range opts {
		o(s)
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
	// The queues: the fleet's when given, else this process's claim
	// gates, the callback gate re-filled from the store.
	if err := s.defaultQueues(ctx); err != nil {
		if s.own {
			s.store.Close()
		}
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.prompts = promptaudio.New(synth, s.log)
	s.ho.init()
	s.startRounds()
	return s, nil
}

// defaultQueues gives the Service this process's queues where it was given
// none: a handoff gate, and a callback gate in front of a store that is not
// a queue itself.
func (s *Service) defaultQueues(ctx context.Context) error {
	if s.hq == nil {
		hq, err := newLocalHandoffs(s.cfg.HandoffLimits(), s.clock)
		if err != nil {
			return err
		}
		s.hq = hq
	}
	if cq, ok := s.store.(CallbackQueue); ok {
		s.cq = cq
		return nil
	}
	cq, err := newLocalCallbacks(ctx, s.store, s.cfg.CallbackLimits(), s.cfg.CallbackLease, s.clock, s.log)
	if err != nil {
		s.hq.Stop()
		return err
	}
	s.cq = cq
	return nil
}

// Close stops the stages' timers, closes agents' connections, waits for
// background work and closes the store New opened. Live handoffs resolve
// as Closed. Accepted callbacks stay in the store for the next start.
func (s *Service) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.prompts.Close()
	s.ho.closeAgents()
	s.closeHandoffs()
	s.ho.mu.Lock()
	for _, st := range s.ho.byRef {
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Closed})
	}
	s.ho.mu.Unlock()
	s.wg.Wait()
	s.cq.Stop()
	s.hq.Stop()
	if s.own {
		return s.store.Close()
	}
	return nil
}

// Clock returns the clock of the service's stages and timers.
func (s *Service) Clock() clock.Clock { return s.clock }

// Store returns the callback store.
func (s *Service) Store() CallbackStore { return s.store }

// Available lists the fallbacks that have room right now, in offer order.
// Acceptance checks again: room now is not a reservation.
func (s *Service) Available() []prompt.Kind {
	var out []prompt.Kind
	if s.cq.Room() {
		out = append(out, prompt.KindCallback)
	}
	if s.hq.Room() {
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
		LeasesReturned:           s.leasesReturned(),
	}
}

// leasesReturned is the callback queue's count of claims whose lease ran
// out, when it keeps one (this process's gate does).
func (s *Service) leasesReturned() uint64 {
	if c, ok := s.cq.(interface{ LeasesReturned() uint64 }); ok {
		return c.LeasesReturned()
	}
	return 0
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
