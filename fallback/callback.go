package fallback

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// CallbackRequest is a caller's request to be called back.
type CallbackRequest struct {
	Call    string // the session
	Turn    string // the turn whose refusal led here; (Call, Turn) is the idempotency key
	Number  string // E.164, e.g. +15550123; spaces are ignored
	Consent bool   // the caller agreed to be called at Number
	// Tenant and Source (the caller's address), when known, are counted
	// against Config.Bookings with Number.
	Tenant, Source string
}

// CallbackResult is the outcome of RequestCallback. Ref is set only when
// Disposition is Queued (durably accepted) or, for a repeated request, the
// state of the callback accepted before (Queued while live, else Completed
// or Expired).
type CallbackResult struct {
	Disposition stages.Disposition `json:"disposition"`
	Ref         string             `json:"ticket,omitempty"`
}

// callbacks is the in-memory side of the callback stage: which job id is
// current for each live ticket, and the lease timers of claims.
type callbacks struct {
	mu      sync.Mutex        // serializes stage+store changes, so they agree
	jobs    map[string]string // ref -> current job id in the controller
	leases  map[string]clock.Timer
	backlog bool // pending rows in the store that the queue had no room for

	leasesReturned atomic.Uint64
}

func (c *callbacks) init() {
	c.jobs = map[string]string{}
	c.leases = map[string]clock.Timer{}
}

func (c *callbacks) hasBacklog() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backlog
}

func (c *callbacks) stopTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, t := range c.leases {
		t.Stop()
		delete(c.leases, k)
	}
}

func jobID(ref string, attempt int) string { return ref + "/" + strconv.Itoa(attempt) }

// NormalizeNumber returns n without spaces if it is an E.164 number: a plus
// sign, a first digit 1-9 and 8 to 15 digits in all.
func NormalizeNumber(n string) (string, error) {
	n = strings.Join(strings.Fields(n), "")
	if len(n) < 9 || len(n) > 16 || n[0] != '+' || n[1] < '1' || n[1] > '9' {
		return "", ErrNumber
	}
	for _, r := range n[1:] {
		if r < '0' || r > '9' {
			return "", ErrNumber
		}
	}
	return n, nil
}

// Redact hides the middle of a phone number for logs: +15550123 becomes
// +155****23. Numbers never become metric labels.
func Redact(n string) string {
	if len(n) <= 6 {
		return "****"
	}
	return n[:4] + "****" + n[len(n)-2:]
}

// RequestCallback books a callback. It returns ErrConsent, ErrNumber or
// ErrRequest (and no ticket) for a bad request. Otherwise it re-checks room
// in the callback stage and, when there is room, writes the callback to
// the store and returns Queued with a ticket only once the write is
// durable. A full or closed stage is the disposition Overloaded or Closed,
// with a nil error. If the store fails, it returns an error wrapping
// ErrNotEstablished and records it: the caller must hear
// prompt.Failed(prompt.StageCallback, ...). The same (Call, Turn) asking again gets
// the same ticket.
func (s *Service) RequestCallback(ctx context.Context, req CallbackRequest) (CallbackResult, error) {
	if req.Call == "" || req.Turn == "" || len(req.Call) > 256 || len(req.Turn) > 256 {
		return CallbackResult{}, ErrRequest
	}
	if !req.Consent {
		return CallbackResult{}, ErrConsent
	}
	number, err := NormalizeNumber(req.Number)
	if err != nil {
		return CallbackResult{}, err
	}
	if s.closed.Load() {
		return CallbackResult{Disposition: stages.Closed}, nil
	}
	// One client, tenant or number cannot book past its caps: the queue is
	// every refused caller's. Only an accepted callback keeps its count.
	release, d, bound := s.reserveBooking(ctx, req.Source, req.Tenant, number)
	if release == nil {
		s.log.Info("callback refused", "call", req.Call, "turn", req.Turn, "disposition", d, "bound", bound)
		return CallbackResult{Disposition: d}, nil
	}
	res, err := s.cbs.request(ctx, req, number)
	if err != nil || res.Disposition != stages.Queued {
		release()
	}
	return res, err
}

// localCallbacks is the callback queue of one process: the callback stage
// (a claim gate, claimq.go) over the CallbackStore, re-filled from the
// store at start-up. Its methods are the Service's, serialized by cb.mu.
type localCallbacks struct{ *Service }

func (s localCallbacks) request(ctx context.Context, req CallbackRequest, number string) (CallbackResult, error) {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	// A repeated request is answered from the store, without a new offer.
	if prev, ok, err := s.findCallback(ctx, req.Call, req.Turn); err != nil {
		return s.notEstablished(req, err)
	} else if ok {
		return CallbackResult{Disposition: callbackDisposition(prev.Status), Ref: prev.Ref}, nil
	}
	// Waiting rows from before a restart go first; if they fill the
	// queue, this offer is refused as Overloaded and counted.
	s.refillLocked(ctx)
	now := s.clock.Now()
	ref := newRef("cb_")
	id := jobID(ref, 0)
	d, err := s.cbq.offer(stages.Job{ID: id, Owner: ref, Born: now})
	if err != nil {
		return s.notEstablished(req, err)
	}
	if d != stages.Queued {
		s.log.Info("callback refused", "call", req.Call, "turn", req.Turn, "disposition", d)
		return CallbackResult{Disposition: d}, nil
	}
	got, created, err := s.store.Accept(ctx, Callback{Ref: ref, Call: req.Call, Turn: req.Turn, Number: number, Accepted: now})
	if err != nil || !created {
		s.cbq.cancel(id, ref)
		if errors.Is(err, ErrQueueFull) { // the store's own (fleet-wide) bound
			s.log.Info("callback refused", "call", req.Call, "turn", req.Turn, "disposition", stages.Overloaded, "bound", "store")
			return CallbackResult{Disposition: stages.Overloaded}, nil
		}
		if err != nil {
			return s.notEstablished(req, err)
		}
		return CallbackResult{Disposition: callbackDisposition(got.Status), Ref: got.Ref}, nil
	}
	s.cb.jobs[ref] = id
	s.log.Info("callback accepted", "call", req.Call, "turn", req.Turn, "ticket", ref) // no number at info level, not even redacted
	return CallbackResult{Disposition: stages.Queued, Ref: ref}, nil
}

func (s *Service) notEstablished(req CallbackRequest, err error) (CallbackResult, error) {
	s.failures.Add(1)
	s.log.Error("callback not established", "call", req.Call, "turn", req.Turn, "number", Redact(req.Number), "err", err)
	return CallbackResult{}, fmt.Errorf("%w: callback: %w", ErrNotEstablished, err)
}

func callbackDisposition(st Status) stages.Disposition {
	switch st {
	case StatusPending, StatusClaimed:
		return stages.Queued
	case StatusExpired:
		return stages.Expired
	}
	return stages.Completed
}

// findCallback looks up (call, turn) among stored callbacks.
func (s *Service) findCallback(ctx context.Context, call, turn string) (Callback, bool, error) {
	return s.store.Find(ctx, call, turn)
}

// restore re-fills the callback stage from the store at start-up: unexpired
// claims take a slot again (or return to pending if the slots shrank),
// then pending callbacks are offered oldest first with their original
// acceptance time, so the stage's bound and ages hold across restarts.
func (s localCallbacks) start(ctx context.Context) error { return s.restore(ctx) }

func (s *Service) restore(ctx context.Context) error {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	claimed, err := s.store.List(ctx, 0, StatusClaimed)
	if err != nil {
		return err
	}
	for _, c := range claimed {
		now := s.clock.Now()
		if c.LeaseUntil.After(now) {
			id := jobID(c.Ref, c.Attempt)
			if d, _ := s.cbq.offer(stages.Job{ID: id, Owner: c.Ref, Born: c.Accepted}); d == stages.Queued {
				if d, got, _ := s.cbq.claim(id); d == stages.Admitted && got == id {
					s.cb.jobs[c.Ref] = id
					s.armLeaseLocked(c.Ref, c.Attempt, c.LeaseUntil.Sub(now))
					continue
				}
				s.cbq.cancel(id, c.Ref)
			}
		}
		if err := s.store.Return(ctx, c.Ref, c.Attempt, now); err != nil && !errors.Is(err, ErrLeaseLost) {
			return err
		}
	}
	s.cb.backlog = true
	s.refillLocked(ctx)
	return nil
}

// refillLocked offers pending callbacks that are not in the stage yet,
// oldest first, while the queue has room. Under cb.mu.
func (s *Service) refillLocked(ctx context.Context) {
	if !s.cb.backlog {
		return
	}
	pending, err := s.store.List(ctx, 0, StatusPending)
	if err != nil {
		s.log.Error("callback refill", "err", err)
		return
	}
	s.cb.backlog = false
	for _, c := range pending {
		if _, ok := s.cb.jobs[c.Ref]; ok {
			continue
		}
		if !s.cbq.room() {
			s.cb.backlog = true
			return
		}
		id := jobID(c.Ref, c.Attempt)
		d, err := s.cbq.offer(stages.Job{ID: id, Owner: c.Ref, Born: c.Accepted})
		switch {
		case err != nil:
			s.log.Error("callback refill", "ticket", c.Ref, "err", err)
		case d == stages.Queued:
			s.cb.jobs[c.Ref] = id
		case d == stages.Expired:
			s.expireCallbackLocked(c.Ref)
		default: // closed or full: leave it pending in the store
			s.cb.backlog = true
			return
		}
	}
}

func (s *Service) callbacksExpired(ids []string) {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	s.expireCallbacksLocked(ids)
	s.refillLocked(s.ctx)
}

func (s *Service) expireCallbacksLocked(ids []string) {
	for _, id := range ids {
		ref, _, _ := strings.Cut(id, "/")
		if s.cb.jobs[ref] == id {
			s.expireCallbackLocked(ref)
		}
	}
}

func (s *Service) expireCallbackLocked(ref string) {
	delete(s.cb.jobs, ref)
	if err := s.store.Expire(s.ctx, ref, s.clock.Now()); err != nil {
		s.log.Error("callback expire", "ticket", ref, "err", err)
		return
	}
	s.log.Warn("callback expired unclaimed", "ticket", ref)
}
