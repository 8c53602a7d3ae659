package fallback

import (
	"sync"
	"time"

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
	// MaxKeys bounds the sources, tenants and numbers remembered (0:
	// 100000); past it a new one is refused until a window ends, rather
	// than forgetting a count (which would hand it a fresh budget).
	MaxKeys int
}

// DefaultBookingLimits: a tenth of the default callback queue per tenant,
// a few per caller address and per number.
var DefaultBookingLimits = BookingLimits{PerSource: 5, PerTenant: 100, PerNumber: 3, Period: time.Hour}

// bookings counts what was booked per key, in fixed windows of Period
// from each key's first booking.
type bookings struct {
	lim   BookingLimits
	clock stages.Clock

	mu      sync.Mutex
	counts  map[string]*window
	refused map[string]uint64 // by bound
}

type window struct {
	start time.Time
	n     int
}

func newBookings(lim BookingLimits, clock stages.Clock) *bookings {
	if lim.Period <= 0 {
		lim.Period = time.Hour
	}
	if lim.MaxKeys <= 0 {
		lim.MaxKeys = 100000
	}
	return &bookings{lim: lim, clock: clock, counts: map[string]*window{}, refused: map[string]uint64{}}
}

// bookingKey is one counted key: its kind prefix and value, with its cap.
type bookingKey struct {
	key string
	max int
}

// keys are the counted keys of a booking (empty values are not counted).
func (b *bookings) keys(source, tenant, number string) []bookingKey {
	var ks []bookingKey
	add := func(prefix, v string, max int) {
		if v != "" && max > 0 {
			ks = append(ks, bookingKey{prefix + v, max})
		}
	}
	add("s:", source, b.lim.PerSource)
	add("t:", tenant, b.lim.PerTenant)
	add("n:", number, b.lim.PerNumber)
	return ks
}

// reserve counts one booking against every key, or none when any is at
// its cap (reporting which). release gives the booking back (it was not
// accepted).
func (b *bookings) reserve(ks []bookingKey) (release func(), bound string, ok bool) {
	if len(ks) == 0 {
		return func() {}, "", true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	ws := make([]*window, len(ks))
	for i, k := range ks {
		w := b.counts[k.key]
		if w != nil && now.Sub(w.start) >= b.lim.Period {
			w = nil // its window has ended
			delete(b.counts, k.key)
		}
		if w == nil {
			if len(b.counts) >= b.lim.MaxKeys && !b.pruneLocked(now) {
				return nil, "keys", false
			}
			w = &window{start: now}
		}
		if w.n >= k.max {
			return nil, boundName(k.key), false
		}
		ws[i] = w
	}
	for i, k := range ks {
		ws[i].n++
		b.counts[k.key] = ws[i]
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, w := range ws {
				w.n--
			}
		})
	}, "", true
}

// pruneLocked drops the keys whose window has ended; it reports whether
// there is room now.
func (b *bookings) pruneLocked(now time.Time) bool {
	for k, w := range b.counts {
		if now.Sub(w.start) >= b.lim.Period {
			delete(b.counts, k)
		}
	}
	return len(b.counts) < b.lim.MaxKeys
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
	s.bookings.mu.Lock()
	s.bookings.refused[bound]++
	s.bookings.mu.Unlock()
}

// BookingsRefused returns the callbacks and handoffs refused by
// Config.Bookings so far, by bound: per_source, per_tenant, per_number or
// keys (too many remembered).
func (s *Service) BookingsRefused() map[string]uint64 {
	s.bookings.mu.Lock()
	defer s.bookings.mu.Unlock()
	m := make(map[string]uint64, len(s.bookings.refused))
	for k, v := range s.bookings.refused {
		m[k] = v
	}
	return m
}
