package fallback

import (
	"context"
	"errors"
)

// Operator errors.
var (
	// ErrNoneWaiting: no callback is waiting to be claimed.
	ErrNoneWaiting = errors.New("fallback: no callback waiting")
	// ErrSlotsBusy: every claim slot (-callback-slots) is held.
	ErrSlotsBusy = errors.New("fallback: every claim slot is in use")
	// ErrNotNext: the callback named waits behind older ones.
	ErrNotNext = errors.New("fallback: an older callback is waiting: claim the oldest")
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
	c, err := s.cq.Next(ctx, operator, "", s.clock.Now())
	s.touched()
	if err == nil {
		s.log.Info("callback claimed", "ticket", c.Ref, "operator", operator, "attempt", c.Attempt) // no number at info level
	}
	return c, err
}

// FinishCallback records the end of a claimed callback: to is
// StatusCompleted or StatusFailed, note says what happened. attempt is the
// Attempt the claim returned; a superseded claim gets ErrLeaseLost. An
// attempt of 0 finishes whoever holds the claim (operator override).
func (s *Service) FinishCallback(ctx context.Context, ref string, attempt int, to Status, note string) (Callback, error) {
	if len(note) > 1024 {
		note = note[:1024]
	}
	c, err := s.cq.Finish(ctx, ref, attempt, to, note, s.clock.Now())
	s.touched()
	if err == nil {
		s.log.Info("callback finished", "ticket", ref, "status", c.Status, "attempt", c.Attempt)
	}
	return c, err
}

// ListCallbacks lists stored callbacks with the given statuses (all when
// none), oldest first, at most limit (all when <= 0).
func (s *Service) ListCallbacks(ctx context.Context, limit int, statuses ...Status) ([]Callback, error) {
	return s.cq.List(ctx, limit, statuses...)
}

// RedactedCallback is c with its number redacted, for lists and logs.
func RedactedCallback(c Callback) Callback {
	c.Number = Redact(c.Number)
	return c
}
