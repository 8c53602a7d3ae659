package fallback

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// BookingLimits cap the callbacks and handoffs one client, one tenant and
// one phone number may book per period, so that no one client can fill
// the queues that every refused caller needs. 0 turns a cap off.
type BookingLimits struct {
	PerSource int           // bookings from one caller address (Source)
	PerTenant int           // bookings of one tenant
	PerNumber int           // callbacks to one phone number
	Period    time.Duration // the window each cap counts over (0: 1h)
	// MaxKeys bounds the sources, tenants and numbers remembered in
	// process (0: 100000); past it a new one is refused until a window
	// ends, rather than forgetting a count (which would hand it a fresh
	// budget). A fleet's counter keeps each key only for its window.
	MaxKeys int
}

// DefaultBookingLimits: a tenth of the default callback queue per tenant,
// a few per caller address and per number.
var DefaultBookingLimits = BookingLimits{PerSource: 5, PerTenant: 100, PerNumber: 3, Period: time.Hour}

// BookingKey is one counted key of a booking, its kind and value ("s:"
// and the caller's address, "t:" and the tenant, "n:" and the number), with
// its cap.
type BookingKey struct {
	Key string
	Max int
}

// ErrBookingKeys is a BookingCounter's refusal when it remembers as many
// keys as it may and none of their windows has ended.
var ErrBookingKeys = errors.New("fallback: too many booking keys remembered")

// BookingCounter counts bookings per key, in fixed windows of a period from
// each key's first booking, for the caps of Config.Bookings. The Service
// counts in process by default; in fleet mode the counts are the fleet's
// (WithBookingCounter, redisqueue.Bookings), so that one caller address,
// tenant or number reaching several replicas meets one cap, not one per
// replica. Implementations are safe for concurrent use.
type BookingCounter interface {
	// Reserve counts one booking against every key, or against none when
	// any is at its cap: it returns -1 when counted, else the index of the
	// first key at its cap. ErrBookingKeys, or an error reaching the
	// fleet's store, counts nothing.
	Reserve(ctx context.Context, keys []BookingKey, period time.Duration) (int, error)
	// Release gives back one booking of every key that Reserve counted
	// (the booking was not accepted after all).
	Release(ctx context.Context, keys []BookingKey) error
}

// WithBookingCounter counts Config.Bookings in c, shared by every process
// of a fleet, instead of in this process.
func WithBookingCounter(c BookingCounter) Option { return func(s *Service) { s.counter = c } }

// bookingKeys are the counted keys of a booking (empty values and caps
// turned off are not counted).
func bookingKeys(lim BookingLimits, source, tenant, number string) []BookingKey {
	var ks []BookingKey
	add := func(prefix, v string, max int) {
		if v != "" && max > 0 {
			ks = append(ks, BookingKey{prefix + v, max})
		}
	}
	add("s:", source, lim.PerSource)
	add("t:", tenant, lim.PerTenant)
	add("n:", number, lim.PerNumber)
	return ks
}

// reserveBooking counts a booking against Config.Bookings. When it is
// refused, d is the disposition the caller is told (Overloaded at a cap,
// Closed when the fleet's counter cannot be reached: fail closed) and bound
// names the cap. Otherwise release gives the booking back if it is not
// accepted after all.
func (s *Service) reserveBooking(ctx context.Context, source, tenant, number string) (release func(), d stages.Disposition, bound string) {
	ks := bookingKeys(s.cfg.Bookings, source, tenant, number)
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
		bound = boundName(ks[full].Key)
		s.bookingRefused(bound)
		return nil, stages.Overloaded, bound
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Not under the caller's context: a hung-up caller's booking
			// is given back all the same.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fleetTimeout)
			defer cancel()
			if err := s.counter.Release(rctx, ks); err != nil {
				s.log.Warn("booking not given back; it counts until its window ends", "err", err)
			}
		})
	}, 0, ""
}

func boundName(key string) string {
	switch key[0] {
	case 's':
		return "per_source"
	case 't':
		return "per_tenant"
	}
	return "per_number"
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

// bookings is the in-process BookingCounter.
type bookings struct {
	maxKeys int
	clock   clock.Clock

	mu     sync.Mutex
	counts map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newBookings(lim BookingLimits, clock clock.Clock) *bookings {
	if lim.MaxKeys <= 0 {
		lim.MaxKeys = 100000
	}
	return &bookings{maxKeys: lim.MaxKeys, clock: clock, counts: map[string]*window{}}
}

// Reserve implements BookingCounter.
func (b *bookings) Reserve(_ context.Context, ks []BookingKey, period time.Duration) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	ws := make([]*window, len(ks))
	for i, k := range ks {
		w := b.counts[k.Key]
		if w != nil && now.Sub(w.start) >= period {
			w = nil // its window has ended
			delete(b.counts, k.Key)
		}
		if w == nil {
			if len(b.counts) >= b.maxKeys && !b.pruneLocked(now, period) {
				return -1, ErrBookingKeys
			}
			w = &window{start: now}
		}
		if w.n >= k.Max {
			return i, nil
		}
		ws[i] = w
	}
	for i, k := range ks {
		ws[i].n++
		b.counts[k.Key] = ws[i]
	}
	return -1, nil
}

// Release implements BookingCounter.
func (b *bookings) Release(_ context.Context, ks []BookingKey) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range ks {
		if w := b.counts[k.Key]; w != nil && w.n > 0 {
			w.n--
		}
	}
	return nil
}

// pruneLocked drops the keys whose window has ended; it reports whether
// there is room now.
func (b *bookings) pruneLocked(now time.Time, period time.Duration) bool {
	for k, w := range b.counts {
		if now.Sub(w.start) >= period {
			delete(b.counts, k)
		}
	}
	return len(b.counts) < b.maxKeys
}
