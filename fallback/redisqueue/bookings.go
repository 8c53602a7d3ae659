package redisqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
)

// Bookings is the fleet's fallback.BookingCounter: the caps of
// fallback.Config.Bookings (per caller address, tenant and phone number)
// counted in Redis, so that they hold for every replica at once, not once
// per replica. Each key is a counter that lives for its window (PEXPIRE at
// its first booking, by the Redis server's clock), so Redis keeps a key
// only while it counts. Key names carry a hash of the address, tenant or
// number, not the value itself. Every key of one counter shares a hash tag
// (one cluster slot), so one script checks and counts them all at once.
type Bookings struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ fallback.BookingCounter = (*Bookings)(nil)

// NewBookings returns the booking counter name on rdb. Every replica of a
// fleet uses the same name.
func NewBookings(rdb redis.UniversalClient, name string) *Bookings {
	return &Bookings{rdb: rdb, prefix: "fdbk:{" + name + "}:"}
}

// reserveScript: KEYS are the counters, ARGV[1] the window in ms, ARGV[2..]
// the caps. Nothing is counted unless every key is under its cap: it
// returns 0, or the 1-based index of the first key at its cap.
var reserveScript = redis.NewScript(`
for i, k in ipairs(KEYS) do
  if tonumber(redis.call('GET', k) or '0') >= tonumber(ARGV[i + 1]) then return i end
end
for _, k in ipairs(KEYS) do
  if redis.call('INCR', k) == 1 then redis.call('PEXPIRE', k, ARGV[1]) end
end
return 0
`)

// releaseScript gives one booking back to each counter still in its window.
var releaseScript = redis.NewScript(`
for _, k in ipairs(KEYS) do
  if tonumber(redis.call('GET', k) or '0') > 0 then redis.call('DECR', k) end
end
return 0
`)

func (b *Bookings) keys(ks []fallback.BookingKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		sum := sha256.Sum256([]byte(k.Key))
		out[i] = b.prefix + k.Key[:2] + hex.EncodeToString(sum[:12])
	}
	return out
}

// Reserve implements fallback.BookingCounter. It fails with an error
// wrapping ErrUnavailable when Redis cannot be reached: the Service then
// refuses the booking (fail closed).
func (b *Bookings) Reserve(ctx context.Context, ks []fallback.BookingKey, period time.Duration) (int, error) {
	if len(ks) == 0 {
		return -1, nil
	}
	argv := make([]any, 0, 1+len(ks))
	argv = append(argv, max(period.Milliseconds(), 1))
	for _, k := range ks {
		argv = append(argv, k.Max)
	}
	n, err := reserveScript.Run(ctx, b.rdb, b.keys(ks), argv...).Int()
	if err != nil {
		return -1, fmt.Errorf("%w: bookings: %w", ErrUnavailable, err)
	}
	return n - 1, nil
}

// Release implements fallback.BookingCounter.
func (b *Bookings) Release(ctx context.Context, ks []fallback.BookingKey) error {
	if len(ks) == 0 {
		return nil
	}
	if err := releaseScript.Run(ctx, b.rdb, b.keys(ks)).Err(); err != nil {
		return fmt.Errorf("%w: bookings: %w", ErrUnavailable, err)
	}
	return nil
}
