// Package tenant is who a call belongs to (Caller, carried in the request's
// context) and the caps every tenant's calls and turns are held to
// (Limits; Local in one process), on every transport; and what the layer
// in front (session/guard) hands the engine in a request's context beside
// the Caller: a tenant already counted (WithHeld), something to undo when
// the call ends (WithCallEnd).
package tenant

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"golang.org/x/time/rate"
)

// Caller is who a call belongs to, as the layer in front of the server
// (package session/guard) authenticated it, or as a transport read it from
// a gateway's start or a SIP request. It travels in the request's context
// (WithCaller) into the call: the call's session and turn jobs carry its
// Tenant (stages.Job.Tenant, so each stage's per-tenant queue share
// applies), the call counts against the tenant's calls at once and each
// turn against its turn rate (session.Config.Tenants).
type Caller struct {
	Tenant string
	// Source is the caller's address as the per-address caps count it
	// (an IPv6 address's /64), when the layer in front knows it: the
	// fallback caps what one source may book (callbacks, handoffs).
	Source string
	// AllowTurn reports whether the tenant may start another turn now
	// (nil: always). It is asked only when the engine has no
	// Config.Tenants, which paces every transport's turns itself. A
	// refused turn ends the call: `error` rate_limited, then close 1008 —
	// the tenant is at fault, not the service.
	AllowTurn func() bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// SourceOf is a peer's address ("host:port" or a bare address) as the
// per-address caps count it, for Caller.Source: an IPv4 address itself,
// an IPv6 address its /64 ("" when addr is not an address).
func SourceOf(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return ""
		}
		a = ap.Addr()
	}
	a = a.Unmap()
	if a.Is6() {
		a = netip.PrefixFrom(a, 64).Masked().Addr()
	}
	return a.String()
}

// CallerFrom returns the Caller in ctx (zero: no tenant, no turn limit).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Limits holds one set of caps per tenant across every transport:
// the engine asks it at each call's start and each turn's, whatever door
// the call came in by (native, WebRTC, every gateway dialect, AudioSocket,
// SIP). In fleet mode it keeps its counts in the store, so that the caps
// hold across replicas. The tenant "" (no authentication) is never capped.
type Limits interface {
	// EnterCall counts a call against tenant's calls at once. It returns
	// ErrFull when the tenant is at its cap, another error when the
	// count cannot be kept (the call is then refused closed). release,
	// called once, gives the place back.
	EnterCall(ctx context.Context, tenant string) (release func(), err error)
	// AllowTurn spends one of tenant's turns: ErrRateLimited when it is
	// over its rate.
	AllowTurn(ctx context.Context, tenant string) error
}

// Caps are one tenant's caps: calls at once and turns per minute.
type Caps struct {
	// Sessions caps the tenant's calls at once (0: no cap).
	Sessions int
	// TurnsPerMinute and TurnBurst pace the tenant's turns across all its
	// calls (0: no limit; burst 0: a tenth of a minute's turns, at least 1).
	TurnsPerMinute float64
	TurnBurst      int
}

func (c Caps) burst() int {
	if c.TurnBurst > 0 {
		return c.TurnBurst
	}
	return max(1, int(c.TurnsPerMinute/10))
}

// Local keeps every tenant's caps in this process: the Limits
// of a single server, shared by the engine (every call's and turn's start,
// on every transport) and the guard in front (before an upgrade). In fleet
// mode the store keeps them instead (stages/redisstage.Tenants).
type Local struct {
	caps  Caps
	max   int // tenants remembered; idle ones are forgotten past it
	clock clock.Clock

	mu      sync.Mutex
	tenants map[string]*localTenant
}

type localTenant struct {
	sessions int
	turns    *rate.Limiter
}

// NewLocal returns in-process tenant caps. maxTenants bounds the
// tenants remembered (0: 10000); clk paces turns (nil: clock.System).
func NewLocal(caps Caps, maxTenants int, clk clock.Clock) *Local {
	if maxTenants <= 0 {
		maxTenants = 10000
	}
	if clk == nil {
		clk = clock.System
	}
	return &Local{caps: caps, max: maxTenants, clock: clk, tenants: map[string]*localTenant{}}
}

// EnterCall implements Limits.
func (ts *Local) EnterCall(_ context.Context, name string) (func(), error) {
	if name == "" || ts.caps.Sessions <= 0 {
		return func() {}, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tenantLocked(name)
	if t.sessions >= ts.caps.Sessions {
		return nil, ErrFull
	}
	t.sessions++
	var once sync.Once
	return func() {
		once.Do(func() {
			ts.mu.Lock()
			t.sessions--
			ts.mu.Unlock()
		})
	}, nil
}

// AllowTurn implements Limits.
func (ts *Local) AllowTurn(_ context.Context, name string) error {
	if name == "" || ts.caps.TurnsPerMinute <= 0 {
		return nil
	}
	ts.mu.Lock()
	lim := ts.tenantLocked(name).turns
	ts.mu.Unlock()
	if !lim.AllowN(ts.clock.Now(), 1) {
		return ErrRateLimited
	}
	return nil
}

// Sessions returns the tenant's calls at once (tests, metrics).
func (ts *Local) Sessions(name string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.tenants[name]; ok {
		return t.sessions
	}
	return 0
}

func (ts *Local) tenantLocked(name string) *localTenant {
	t, ok := ts.tenants[name]
	if ok {
		return t
	}
	if len(ts.tenants) >= ts.max {
		now := ts.clock.Now()
		for n, x := range ts.tenants {
			// A tenant with calls, or whose turn budget has not filled up
			// again, is kept: forgetting it would hand it a fresh burst.
			if x.sessions == 0 && (x.turns == nil || x.turns.TokensAt(now) >= float64(ts.caps.burst())) {
				delete(ts.tenants, n)
			}
		}
	}
	t = &localTenant{}
	if ts.caps.TurnsPerMinute > 0 {
		t.turns = rate.NewLimiter(rate.Limit(ts.caps.TurnsPerMinute/60), ts.caps.burst())
	}
	ts.tenants[name] = t
	return t
}

// ErrRateLimited ends a call whose tenant is over its turn rate.
var ErrRateLimited = errors.New("tenant: over its turn rate")

// ErrFull refuses a call whose tenant is at its cap of calls at once.
// It is an ErrRateLimited: the tenant is at fault, and the call is ended
// the same way (`error` rate_limited, close 1008).
var ErrFull = fmt.Errorf("%w: at its cap of calls at once", ErrRateLimited)

// CodeRateLimited is the session ErrorMsg code sent before a call is closed (1008)
// for its tenant's turn rate or cap of calls at once.
const CodeRateLimited = "rate_limited"

type heldKey struct{}

// WithHeld tells the engine that the layer in front (package
// session/guard) has already counted this request's call against tenant's
// calls at once, on the engine's own Limits, and releases it when the
// call ends (WithCallEnd): the engine does not count it again. A transport
// that names another tenant (a gateway's start) is counted by the engine.
func WithHeld(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, heldKey{}, tenant)
}

// Held is the tenant the layer in front counted ctx's call against
// (WithHeld), "" if none.
func Held(ctx context.Context) string {
	t, _ := ctx.Value(heldKey{}).(string)
	return t
}

// WithCallEnd is for a handler in front of the server's (package
// session/guard) that has something to undo once the call a request
// started has ended, such as counting a tenant's calls at once: undo used
// to run when the wrapped handler returned, but the native WebSocket
// handler returns as soon as its call is accepted and the call runs on. It
// returns the request's context to pass on and handlerDone, to be called
// once when the wrapped handler has returned:
//
//	ctx, handlerDone := tenant.WithCallEnd(r.Context(), undo)
//	next.ServeHTTP(w, r.WithContext(ctx))
//	handlerDone()
//
// undo runs once, after handlerDone and after the end of the call the
// handler left running, if any (the handlers that serve their call to its
// end, such as Twilio's and WebRTC's, leave none).
func WithCallEnd(ctx context.Context, undo func()) (context.Context, func()) {
	e := &callEnd{undo: undo}
	e.refs.Store(1)
	return context.WithValue(ctx, callEndKey{}, e), e.done
}

type callEndKey struct{}

// callEnd runs undo when its last holder is done: the handler, and the
// call that outlives it.
type callEnd struct {
	refs atomic.Int32
	undo func()
}

func (e *callEnd) done() {
	if e.refs.Add(-1) == 0 && e.undo != nil {
		e.undo()
	}
}

// HoldCallEnd makes a call that outlives its handler a holder of the
// request's callEnd, if it has one; the call calls the function returned
// when it has ended. It must be called before the handler returns.
func HoldCallEnd(ctx context.Context) func() {
	e, ok := ctx.Value(callEndKey{}).(*callEnd)
	if !ok {
		return func() {}
	}
	e.refs.Add(1)
	return e.done
}
