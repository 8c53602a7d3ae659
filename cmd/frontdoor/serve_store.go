package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
)

// storeSettings are the fleet flags of frontdoor serve.
type storeSettings struct {
	url      string
	leaseTTL time.Duration
	timeout  time.Duration
}

func storeFlags(fs *flag.FlagSet) *storeSettings {
	s := &storeSettings{}
	fs.StringVar(&s.url, "store", "", "fleet mode: redis://HOST:PORT/DB shared by every replica, so that stage limits are fleet-wide and callbacks are shared (empty: in-process stages, callbacks in -data-dir)")
	fs.DurationVar(&s.leaseTTL, "store-lease-ttl", redisstage.DefaultLeaseTTL, "fleet mode: how long a lease outlives its replica's last renewal; a dead replica's capacity comes back after this")
	fs.DurationVar(&s.timeout, "store-timeout", time.Second, "fleet mode: how long one admission decision may wait for Redis before it fails closed")
	return s
}

// fleet is the Redis behind -store. A nil *fleet is the in-process default:
// its methods then give the local policy and no readiness check.
type fleet struct {
	rdb     *redis.Client
	set     storeSettings
	log     *slog.Logger
	gates   []stages.Gate
	tenants *redisstage.Tenants // fleet-wide tenant caps (useFleet)
}

// openFleet connects to -store; it returns nil, nil without it. It does not
// wait for Redis: a fleet that cannot reach it starts, fails closed and
// reports it on /readyz until it can.
func openFleet(set *storeSettings, policy stages.Policy, log *slog.Logger) (*fleet, error) {
	if set == nil || set.url == "" {
		return nil, nil
	}
	if policy.Baseline() {
		return nil, fmt.Errorf("-store runs the frontdoor policy only; -policy %s is in-process", policy)
	}
	opt, err := redis.ParseURL(set.url)
	if err != nil {
		return nil, fmt.Errorf("-store %q: %w", set.url, err)
	}
	// Short timeouts and no retries: an outage must show at once, as a
	// refusal, not as callers waiting.
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = set.timeout, set.timeout, set.timeout
	opt.MaxRetries = -1
	// go-redis logs every failed dial on its own; the outage is reported
	// by /readyz and by the refusals' warnings, so its lines go to debug.
	redis.SetLogger(redisLog{log})
	log.Info("fleet mode", "store", opt.Addr, "db", opt.DB, "lease_ttl", set.leaseTTL)
	return &fleet{rdb: redis.NewClient(opt), set: *set, log: log}, nil
}

// newGate builds every stage's gate for the session server: on Redis in
// fleet mode (redisstage, whose dispatcher resolves this replica's work on
// its own when Redis does not answer), else the in-process controller with
// policy. It is what frontdoor serve wires; the conformance test of the
// serve stack (serve_stack_test.go) runs on exactly these gates.
func (f *fleet) newGate(policy stages.Policy, log *slog.Logger) func(string, stages.Limits, clock.Clock) (stages.Gate, error) {
	return func(name string, l stages.Limits, c clock.Clock) (stages.Gate, error) {
		if f == nil {
			return session.LocalGate(l, c, log.With("stage", name), stages.WithPolicy(policy))
		}
		st, err := redisstage.New(f.rdb, name, l, redisstage.Options{LeaseTTL: f.set.leaseTTL})
		if err != nil {
			return nil, err
		}
		d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: c})
		f.gates = append(f.gates, d)
		return d, nil
	}
}

// fallbackOptions put the callback and handoff queues in Redis Streams in
// fleet mode, bounded and claimed fleet-wide (redisqueue), and count the
// booking caps (-booking-per-source, -per-tenant, -per-number) in Redis,
// so that they hold for the fleet, not once per replica.
func (f *fleet) fallbackOptions(cfg fallback.Config) ([]fallback.Option, error) {
	if f == nil {
		return nil, nil
	}
	return []fallback.Option{
		fallback.WithStore(redisqueue.NewCallbackStore(f.rdb, "callbacks", cfg)),
		fallback.WithHandoffQueue(redisqueue.NewHandoffQueue(f.rdb, "handoffs", cfg, f.set.leaseTTL)),
		fallback.WithBookingCounter(redisqueue.NewBookings(f.rdb, "bookings")),
	}, nil
}

// ready is the /readyz check: every stage can decide admission.
func (f *fleet) ready(ctx context.Context) error {
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.set.timeout)
	defer cancel()
	for _, g := range f.gates {
		if err := g.Ready(ctx); err != nil {
			return err
		}
	}
	return nil
}

// readyFunc is ready for session.Config.Ready (nil without -store).
func (f *fleet) readyFunc() func(context.Context) error {
	if f == nil {
		return nil
	}
	return f.ready
}

// Close closes the client, after the session server stopped its stages
// (and its calls, which stop their tenant places' renewals).
func (f *fleet) Close() {
	if f != nil {
		if f.tenants != nil {
			f.tenants.Wait()
		}
		_ = f.rdb.Close()
	}
}

// useFleet keeps the tenant caps and the call tokens' single use in the
// fleet's store, so that they hold across replicas, not once per replica.
// It runs after openFleet and before the server is built; without -store
// it changes nothing.
func (w *guardWiring) useFleet(f *fleet) {
	if f == nil {
		return
	}
	cfg := w.set.Config(w.auth)
	f.tenants = redisstage.NewTenants(f.rdb, redisstage.TenantOptions{Sessions: cfg.TenantSessions,
		TurnsPerMinute: cfg.TenantTurnsPerMinute, TurnBurst: cfg.TenantTurnBurst, LeaseTTL: f.set.leaseTTL})
	w.tenants = fleetTenants{f.tenants}
	w.limits.tenants = w.tenants
	if w.calls != nil {
		w.calls.Used = redisstage.NewUsedTokens(f.rdb)
	}
}

// fleetTenants are redisstage.Tenants as tenant.Limits.
type fleetTenants struct{ t *redisstage.Tenants }

func (f fleetTenants) EnterCall(ctx context.Context, name string) (func(), error) {
	release, err := f.t.EnterCall(ctx, name)
	if errors.Is(err, redisstage.ErrTenantFull) {
		return nil, tenant.ErrFull
	}
	return release, err
}

func (f fleetTenants) AllowTurn(ctx context.Context, name string) error {
	err := f.t.AllowTurn(ctx, name)
	if errors.Is(err, redisstage.ErrTurnRate) {
		return tenant.ErrRateLimited
	}
	return err
}

// redisLog is go-redis's internal logger on slog at debug level.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}
