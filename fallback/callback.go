package fallback

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/frontdoorhq/frontdoor/stages"
)

// CallbackRequest is a caller's request to be called back.
type CallbackRequest struct {
	Call    string // the session
	Turn    string // the turn whose refusal led here; (Call, Turn) is the idempotency key
	Number  string // E.164, e.g. +15550123; spaces are ignored
	Consent bool   // the caller agreed to be called at Number
	// Tenant and Source (the caller's address), when known, are counted
	// against Config.Bookings with Number; the callback keeps Tenant, for
	// a tenant's share of the queue.
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
	res, err := s.requestCallback(ctx, req, number)
	if err != nil || res.Disposition != stages.Queued {
		release()
	}
	return res, err
}

// requestCallback books a callback in the queue, which checks its bound in
// the same step as the store's write. A repeated request is answered from
// the store, without a new offer.
func (s *Service) requestCallback(ctx context.Context, req CallbackRequest, number string) (CallbackResult, error) {
	if prev, ok, err := s.cq.Find(ctx, req.Call, req.Turn); err != nil {
		return s.notEstablished(req, err)
	} else if ok {
		return CallbackResult{Disposition: callbackDisposition(prev.Status), Ref: prev.Ref}, nil
	}
	got, created, err := s.cq.Accept(ctx, Callback{Ref: newRef("cb_"), Call: req.Call, Turn: req.Turn, Number: number, Accepted: s.clock.Now(), Tenant: req.Tenant})
	s.touched()
	switch {
	case errors.Is(err, ErrQueueFull):
		s.log.Info("callback refused", "call", req.Call, "turn", req.Turn, "disposition", stages.Overloaded)
		return CallbackResult{Disposition: stages.Overloaded}, nil
	case err != nil:
		return s.notEstablished(req, err)
	case !created:
		return CallbackResult{Disposition: callbackDisposition(got.Status), Ref: got.Ref}, nil
	}
	s.log.Info("callback accepted", "call", req.Call, "turn", req.Turn, "ticket", got.Ref) // no number at info level, not even redacted
	return CallbackResult{Disposition: stages.Queued, Ref: got.Ref}, nil
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
