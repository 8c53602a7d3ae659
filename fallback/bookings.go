package fallback

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/booking"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The booking caps are package fallback/booking's; their names are kept
// here as aliases for the Service's callers.
type (
	BookingLimits  = booking.Limits
	BookingKey     = booking.Key
	BookingCounter = booking.Counter
)

// DefaultBookingLimits are booking.DefaultLimits.
var DefaultBookingLimits = booking.DefaultLimits

// ErrBookingKeys is booking.ErrKeys.
var ErrBookingKeys = booking.ErrKeys

// WithBookingCounter counts Config.Bookings in c, shared by every process
// of a fleet, instead of in this process.
func WithBookingCounter(c BookingCounter) Option { return func(s *Service) { s.counter = c } }

// reserveBooking counts a booking against Config.Bookings. When it is
// refused, d is the disposition the caller is told (Overloaded at a cap,
// Closed when the fleet's counter cannot be reached: fail closed) and bound
// names the cap. Otherwise release gives the booking back if it is not
// accepted after all.
func (s *Service) reserveBooking(ctx context.Context, source, tenant, number string) (release func(), d stages.Disposition, bound string) {
	ks := booking.Keys(s.cfg.Bookings, source, tenant, number)
	if len(ks) == 0 {
		return func() {}, 0, ""
	}
	period := s.cfg.Bookings.Period
	if period <= 0 {
		period = time.Hour
	}
	full, err := s.counter.Reserve(ctx, ks, period)
	switch {
	case errors.Is(err, ErrBookingKeys):
		s.bookingRefused("keys")
		return nil, stages.Overloaded, "keys"
	case err != nil:
		s.bookingRefused("unavailable")
		s.log.Warn("booking refused: the booking counter cannot be reached", "err", err)
		return nil, stages.Closed, "unavailable"
	case full >= 0:
		bound = booking.Bound(ks[full].Key)
		s.bookingRefused(bound)
		return nil, stages.Overloaded, bound
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Not under the caller's context: a hung-up caller's booking
			// is given back all the same.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueTimeout)
			defer cancel()
			if err := s.counter.Release(rctx, ks); err != nil {
				s.log.Warn("booking not given back; it counts until its window ends", "err", err)
			}
		})
	}, 0, ""
}

func (s *Service) bookingRefused(bound string) {
	s.refusedMu.Lock()
	s.refused[bound]++
	s.refusedMu.Unlock()
}

// BookingsRefused returns the callbacks and handoffs refused by
// Config.Bookings so far by this process, by bound: per_source, per_tenant,
// per_number, keys (too many remembered) or unavailable (the fleet's
// counter could not be reached).
func (s *Service) BookingsRefused() map[string]uint64 {
	s.refusedMu.Lock()
	defer s.refusedMu.Unlock()
	m := make(map[string]uint64, len(s.refused))
	for k, v := range s.refused {
		m[k] = v
	}
	return m
}
