package redisstage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/redis/go-redis/v9"
)

// Errors of Tenants; callers map them to their own.
var (
	// ErrTenantFull: the tenant is at its cap of calls at once fleet-wide.
	ErrTenantFull = errors.New("redisstage: tenant at its cap of calls at once")
	// ErrTurnRate: the tenant is over its turn rate fleet-wide.
	ErrTurnRate = errors.New("redisstage: tenant over its turn rate")
)

// TenantOptions are the fleet-wide caps of every tenant.
type TenantOptions struct {
	// Sessions caps a tenant's calls at once across the fleet (0: none).
	Sessions int
	// TurnsPerMinute and TurnBurst pace a tenant's turns across the fleet
	// (0: no limit; burst 0: a tenth of a minute's turns, at least 1).
	TurnsPerMinute float64
	TurnBurst      int
	// LeaseTTL is how long a call's place outlives its replica's last
	// renewal: a dead replica's calls give their places back after it
	// (0: DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Prefix of the keys (default "fd:tenant:").
	Prefix string
	// Wall paces the renewals, beside Redis's own time (clock.System when
	// nil), as Options.Wall does for a Store.
	Wall clock.Clock
}

// Tenants keeps each tenant's calls at once and turn budget in Redis, so
// that a tenant's caps hold across every replica of a fleet, not once per
// replica. Times are Redis's own (TIME), so that replicas' clocks do not
// matter. Each call held renews its place every LeaseTTL/3 until released.
type Tenants struct {
	rdb redis.UniversalClient
	opt TenantOptions

	wg sync.WaitGroup // renewals
}

// NewTenants returns fleet-wide tenant caps on rdb.
func NewTenants(rdb redis.UniversalClient, opt TenantOptions) *Tenants {
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = DefaultLeaseTTL
	}
	if opt.Prefix == "" {
		opt.Prefix = "fd:tenant:"
	}
	opt.Wall = clock.Or(opt.Wall)
	if opt.TurnsPerMinute > 0 && opt.TurnBurst <= 0 {
		opt.TurnBurst = max(1, int(opt.TurnsPerMinute/10))
	}
	return &Tenants{rdb: rdb, opt: opt}
}

// tenantEnterScript: KEYS[1] the tenant's calls (a sorted set of call ids by
// lease deadline, ms); ARGV cap, call id, ttl ms. Expired places are
// dropped first (a dead replica's). Returns 1 when entered, 0 when full.
var tenantEnterScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1`)

// tenantRenewScript moves a held place's deadline on, and puts it back if
// the store lost it (data loss): a call in progress counts again within a
// third of the TTL.
var tenantRenewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1`)

// tenantTurnScript is a token bucket: KEYS[1] a hash {tokens, at}; ARGV rate per
// ms, burst. Returns 1 when a token was taken.
var tenantTurnScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(v[1]), tonumber(v[2])
if tokens == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local ok = 0
if tokens >= 1 then tokens = tokens - 1; ok = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return ok`)

// EnterCall counts a call against tenant's cap fleet-wide. It returns
// ErrTenantFull at the cap, or the store's error. release (called once)
// gives the place back and stops its renewal.
func (ts *Tenants) EnterCall(ctx context.Context, tenant string) (release func(), err error) {
	if tenant == "" || ts.opt.Sessions <= 0 {
		return func() {}, nil
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("redisstage: tenant %s: %w", tenant, err)
	}
	id, key, ttl := hex.EncodeToString(b[:]), ts.opt.Prefix+tenant+":calls", ts.opt.LeaseTTL.Milliseconds()
	n, err := tenantEnterScript.Run(ctx, ts.rdb, []string{key}, ts.opt.Sessions, id, ttl).Int()
	if err != nil {
		return nil, fmt.Errorf("redisstage: tenant %s: enter: %w", tenant, err)
	}
	if n == 0 {
		return nil, ErrTenantFull
	}
	rctx, stop := context.WithCancel(context.Background())
	ts.wg.Go(func() { ts.renew(rctx, key, id, ttl) })
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			// Best effort: a place not removed expires with its lease.
			dctx, cancel := context.WithTimeout(context.Background(), ts.opt.LeaseTTL/3)
			defer cancel()
			_ = ts.rdb.ZRem(dctx, key, id).Err()
		})
	}, nil
}

// renew keeps a call's place until ctx ends (its release). A renewal that
// fails is tried again next period; the place lapses only if none succeeds
// within LeaseTTL, as a dead replica's does.
func (ts *Tenants) renew(ctx context.Context, key, id string, ttl int64) {
	tick := clock.NewTicker(ts.opt.Wall, ts.opt.LeaseTTL/3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = tenantRenewScript.Run(ctx, ts.rdb, []string{key}, id, ttl).Err()
		}
	}
}

// AllowTurn spends one of tenant's turns fleet-wide: ErrTurnRate when it
// is over its rate, or the store's error.
func (ts *Tenants) AllowTurn(ctx context.Context, tenant string) error {
	if tenant == "" || ts.opt.TurnsPerMinute <= 0 {
		return nil
	}
	ok, err := tenantTurnScript.Run(ctx, ts.rdb, []string{ts.opt.Prefix + tenant + ":turns"}, ts.opt.TurnsPerMinute/60000, ts.opt.TurnBurst).Int()
	if err != nil {
		return fmt.Errorf("redisstage: tenant %s: turn: %w", tenant, err)
	}
	if ok == 0 {
		return ErrTurnRate
	}
	return nil
}

// Sessions returns the tenant's calls held fleet-wide (tests, metrics).
func (ts *Tenants) Sessions(ctx context.Context, tenant string) (int64, error) {
	return ts.rdb.ZCard(ctx, ts.opt.Prefix+tenant+":calls").Result()
}

// Wait waits for every renewal to stop: call it after the last release.
func (ts *Tenants) Wait() { ts.wg.Wait() }

// UsedTokens remembers spent call tokens in Redis until they expire, so
// that a token is single-use across the fleet.
type UsedTokens struct {
	rdb    redis.UniversalClient
	prefix string
	wall   clock.Clock // what a token's expiry is read against
}

// NewUsedTokens returns the fleet's spent call tokens on rdb.
func NewUsedTokens(rdb redis.UniversalClient) *UsedTokens {
	return &UsedTokens{rdb: rdb, prefix: "fd:calltoken:", wall: clock.System}
}

// Used reports whether nonce has been spent.
func (u *UsedTokens) Used(ctx context.Context, nonce string) (bool, error) {
	n, err := u.rdb.Exists(ctx, u.prefix+nonce).Result()
	if err != nil {
		return false, fmt.Errorf("redisstage: call token: %w", err)
	}
	return n > 0, nil
}

// Spend marks nonce spent until exp: fresh is false when it already was.
func (u *UsedTokens) Spend(ctx context.Context, nonce string, exp time.Time) (fresh bool, err error) {
	ok, err := u.rdb.SetNX(ctx, u.prefix+nonce, 1, exp.Sub(u.wall.Now())+time.Second).Result()
	if err != nil {
		return false, fmt.Errorf("redisstage: call token: %w", err)
	}
	return ok, nil
}
