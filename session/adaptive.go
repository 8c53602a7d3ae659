package session

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// The engine's side of adaptive stage limits (stages/adaptive.New): it
// feeds each stage's gate, when the gate is an observer, the latency
// of the stage's useful signal measured from the lease (the model's first
// token, each sentence's first audio, a recognition's result) and the
// backend's overload errors (429, 503: backend.ErrOverloaded). A gate with
// a fixed limit is not an observer, and nothing is measured for it.

// latencyObserver is a gate with an adaptive limit (stages/adaptive.New's).
type latencyObserver interface {
	Observe(latency time.Duration, overloaded bool)
}

// observe feeds the stage's gate one latency, or an overload error.
func (s *stage) observe(latency time.Duration, overloaded bool) {
	if o, ok := s.gate.(latencyObserver); ok {
		o.Observe(latency, overloaded)
	}
}

// observeHeld feeds what a lease's whole hold says: an overload error on
// any stage, and the recognition stage's result, whose signal is the
// work's end (the others signal from inside their work).
func (s *stage) observeHeld(ctx context.Context, since time.Time, err error) {
	switch {
	case errors.Is(err, backend.ErrOverloaded):
		s.observe(0, true)
	case err == nil && ctx.Err() == nil && s.name == StageRecognize:
		s.observe(s.clock.Now().Sub(since), false)
	}
}

// firstSignal returns a function that, called at each piece of a
// backend's output, feeds the stage the latency from now (the lease) to
// the first piece, once.
func (s *stage) firstSignal() func() {
	start, seen := s.clock.Now(), false
	return func() {
		if !seen {
			seen = true
			s.observe(s.clock.Now().Sub(start), false)
		}
	}
}
