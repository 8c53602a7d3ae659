// Package booking counts the callbacks and handoffs one caller address,
// one tenant and one phone number book per period, so that no one client
// can fill the queues every refused caller needs: the caps (Limits), the
// Counter contract (in process here, NewCounter; fleet-wide in
// fallback/redisqueue) and the keys a booking is counted under.
package booking

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Limits cap the callbacks and handoffs one client, one tenant and one
// phone number may book per period. 0 turns a cap off.
type Limits struct {
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

// DefaultLimits: a tenth of the default callback queue per tenant,
// a few per caller address and per number.
var DefaultLimits = Limits{PerSource: 5, PerTenant: 100, PerNumber: 3, Period: time.Hour}

// Key is one counted key of a booking, its kind and value ("s:" and the
// caller's address, "t:" and the tenant, "n:" and the number), with its cap.
type Key struct {
	Key string
	Max int
}

// ErrKeys is a Counter's refusal when it remembers as many keys as it may
// and none of their windows has ended.
var ErrKeys = errors.New("fallback: too many booking keys remembered")

// Counter counts bookings per key, in fixed windows of a period from each
// key's first booking, for the caps of fallback.Config.Bookings. The
// Service counts in process by default (NewCounter); in fleet mode the
// counts are the fleet's (fallback.WithBookingCounter,
// redisqueue.Bookings), so that one caller address, tenant or number
// reaching several replicas meets one cap, not one per replica.
// Implementations are safe for concurrent use.
type Counter interface {
	// Reserve counts one booking against every key, or against none when
	// any is at its cap: it returns -1 when counted, else the index of the
	// first key at its cap. ErrKeys, or an error reaching the
	// fleet's store, counts nothing.
	Reserve(ctx context.Context, keys []Key, period time.Duration) (int, error)
	// Release gives back one booking of every key that Reserve counted
	// (the booking was not accepted after all).
	Release(ctx context.Context, keys []Key) error
}

// Keys are the counted keys of a booking (empty values and caps
// turned off are not counted).
func Keys(lim Limits, source, tenant, number string) []Key {
	var ks []Key
	add := func(prefix, v string, max int) {
		if v != "" && max > 0 {
			ks = append(ks, Key{prefix + v, max})
		}
	}
	add("s:", source, lim.PerSource)
	add("t:", tenant, lim.PerTenant)
	add("n:", number, lim.PerNumber)
	return ks
}

// Bound names the cap of key, as a metric label: per_source, per_tenant or
// per_number.
func Bound(key string) string {
	switch key[0] {
	case 's':
		return "per_source"
	case 't':
		return "per_tenant"
	}
	return "per_number"
}

// counter is the in-process Counter.
type counter struct {
	maxKeys int
	clock   clock.Clock

	mu     sync.Mutex
	counts map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// NewCounter returns a Counter of one process, which remembers at most
// lim.MaxKeys keys (0: 100000).
func NewCounter(lim Limits, clock clock.Clock) Counter {
	if lim.MaxKeys <= 0 {
		lim.MaxKeys = 100000
	}
	return &counter{maxKeys: lim.MaxKeys, clock: clock, counts: map[string]*window{}}
}

// Reserve implements Counter.
func (b *counter) Reserve(_ context.Context, ks []Key, period time.Duration) (int, error) {
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
				return -1, ErrKeys
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

// Release implements Counter.
func (b *counter) Release(_ context.Context, ks []Key) error {
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
func (b *counter) pruneLocked(now time.Time, period time.Duration) bool {
	for k, w := range b.counts {
		if now.Sub(w.start) >= period {
			delete(b.counts, k)
		}
	}
	return len(b.counts) < b.maxKeys
}
