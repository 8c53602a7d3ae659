package fallback

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// Operator errors.
var (
	// ErrNoneWaiting: no callback is waiting to be claimed.
	ErrNoneWaiting = errors.New("fallback: no callback waiting")
	// ErrSlotsBusy: every claim slot (-callback-slots) is held.
	ErrSlotsBusy = errors.New("fallback: every claim slot is in use")
)

// ClaimCallback gives the oldest waiting callback to operator under a lease
// of Config.CallbackLease. The returned Callback carries the full number
// and the Attempt to pass to FinishCallback. A claim not finished before
// its lease ends returns to the queue. It returns ErrNoneWaiting or
// ErrSlotsBusy when there is nothing to claim.
func (s *Service) ClaimCallback(ctx context.Context, operator string) (Callback, error) {
	if s.closed.Load() {
		return Callback{}, ErrClosed
	}
	return s.cbs.claim(ctx, operator)
}

func (s localCallbacks) claim(ctx context.Context, operator string) (Callback, error) {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	defer s.refillLocked(ctx)
	for {
		d, id, err := s.cbq.Claim("")
		if err != nil {
			return Callback{}, err
		}
		switch d {
		case stages.Admitted:
		case claim.Busy:
			return Callback{}, ErrSlotsBusy
		default:
			return Callback{}, ErrNoneWaiting
		}
		ref, _, _ := strings.Cut(id, "/")
		now := s.clock.Now()
		c, err := s.store.Claim(ctx, ref, operator, now, now.Add(s.cfg.CallbackLease))
		if err != nil {
			// Claimed or finished by another process on the same file,
			// or the store failed: drop it from the stage; a pending row
			// comes back by refill.
			s.cbq.Cancel(id, ref)
			delete(s.cb.jobs, ref)
			s.cb.backlog = true
			if errors.Is(err, ErrNotLive) || errors.Is(err, ErrNotFound) {
				continue
			}
			return Callback{}, err
		}
		s.armLeaseLocked(ref, c.Attempt, s.cfg.CallbackLease)
		s.log.Info("callback claimed", "ticket", ref, "operator", operator, "attempt", c.Attempt) // no number at info level
		return c, nil
	}
}

// FinishCallback records the end of a claimed callback: to is
// StatusCompleted or StatusFailed, note says what happened. attempt is the
// Attempt the claim returned; a superseded claim gets ErrLeaseLost. An
// attempt of 0 finishes whoever holds the claim (operator override).
func (s *Service) FinishCallback(ctx context.Context, ref string, attempt int, to Status, note string) (Callback, error) {
	if len(note) > 1024 {
		note = note[:1024]
	}
	return s.cbs.finish(ctx, ref, attempt, to, note)
}

func (s localCallbacks) finish(ctx context.Context, ref string, attempt int, to Status, note string) (Callback, error) {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	c, err := s.store.Finish(ctx, ref, attempt, to, note, s.clock.Now())
	if err != nil {
		return Callback{}, err
	}
	if t := s.cb.leases[ref]; t != nil {
		t.Stop()
		delete(s.cb.leases, ref)
	}
	if id, ok := s.cb.jobs[ref]; ok {
		if st, _ := s.cbq.Gate().State(id); st == claim.Active {
			s.cbq.Release(id, ref)
		} else {
			s.cbq.Cancel(id, ref)
		}
		delete(s.cb.jobs, ref)
	}
	s.refillLocked(ctx)
	s.log.Info("callback finished", "ticket", ref, "status", c.Status, "attempt", c.Attempt)
	return c, nil
}

// ListCallbacks lists stored callbacks with the given statuses (all when
// none), oldest first, at most limit (all when <= 0).
func (s *Service) ListCallbacks(ctx context.Context, limit int, statuses ...Status) ([]Callback, error) {
	return s.store.List(ctx, limit, statuses...)
}

// armLeaseLocked starts the lease timer of a claim. Under cb.mu.
func (s *Service) armLeaseLocked(ref string, attempt int, after time.Duration) {
	if t := s.cb.leases[ref]; t != nil {
		t.Stop()
	}
	s.cb.leases[ref] = s.clock.AfterFunc(after, func() { s.leaseExpired(ref, attempt) })
}

// leaseExpired returns a claim that ran out to the queue, keeping its
// original acceptance time: if that is now too old, it expires instead.
func (s *Service) leaseExpired(ref string, attempt int) {
	s.cb.mu.Lock()
	defer s.cb.mu.Unlock()
	if s.closed.Load() {
		return
	}
	delete(s.cb.leases, ref)
	now := s.clock.Now()
	if err := s.store.Return(s.ctx, ref, attempt, now); err != nil {
		if !errors.Is(err, ErrLeaseLost) {
			s.log.Error("callback lease return", "ticket", ref, "err", err)
		}
		return
	}
	s.cb.leasesReturned.Add(1)
	if id, ok := s.cb.jobs[ref]; ok {
		s.cbq.Cancel(id, ref)
		delete(s.cb.jobs, ref)
	}
	c, err := s.store.Get(s.ctx, ref)
	if err != nil {
		s.log.Error("callback lease return", "ticket", ref, "err", err)
		s.cb.backlog = true
		return
	}
	id := jobID(ref, c.Attempt)
	d, err := s.cbq.Offer(stages.Job{ID: id, Owner: ref, Born: c.Accepted})
	switch {
	case err == nil && d == stages.Queued:
		s.cb.jobs[ref] = id
		s.log.Warn("callback claim lease ran out; back in the queue", "ticket", ref, "attempt", attempt)
	case err == nil && d == stages.Expired:
		s.expireCallbackLocked(ref)
	default:
		s.cb.backlog = true
		s.log.Warn("callback claim lease ran out; waiting for room in the queue", "ticket", ref, "disposition", d, "err", err)
	}
}

// RedactedCallback is c with its number redacted, for lists and logs.
func RedactedCallback(c Callback) Callback {
	c.Number = Redact(c.Number)
	return c
}
