package guard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/telephony"

	"github.com/frontdoorhq/frontdoor/session/tenant"
)

// Config configures a Guard. Zero values take the defaults noted.
type Config struct {
	// Auth checks tokens (nil: no authentication — every request is let
	// in with every role and no tenant, for development on loopback).
	Auth Authenticator
	// OperatorSeparate: agent and operator paths are served only by the
	// operator handler (Handler(next, Operator)); the public one answers
	// them 404.
	OperatorSeparate bool
	// TenantSessions caps one tenant's calls at once (0: no cap). Over it
	// a new call is answered 429 before the upgrade.
	TenantSessions int
	// TenantTurnsPerMinute and TenantTurnBurst pace one tenant's turns
	// across all its calls (0: no limit; burst 0: a tenth of a minute's
	// turns, at least 1).
	TenantTurnsPerMinute float64
	TenantTurnBurst      int
	// Busy reports that the service has no room for another call (for
	// the session server: Server.SessionFull). A new call is then answered
	// 503 with Retry-After before the upgrade. nil: never busy.
	Busy func() bool
	// RetryAfter is the Retry-After of 429 and 503 answers (0: 1s).
	RetryAfter time.Duration
	// CallTokens, when set, redeems the token of a telephony stream URL
	// (/v1/twilio/<token>): the call's tenant, so that its tenant caps
	// apply. POST /v1/call-tokens mints them (operator role).
	CallTokens *CallTokens
	// VerifyTelephony, when set, checks a telephony upgrade's gateway
	// signature (server.Server.VerifyTwilio) before its call token is
	// spent: a request the gateway did not sign is refused 403 and cannot
	// use up a token.
	VerifyTelephony func(r *http.Request) error
	// RequireCallToken refuses a telephony stream without a token (403).
	RequireCallToken bool
	// MaxTenants bounds the per-tenant state kept (0: 10000); idle
	// tenants are forgotten past it.
	MaxTenants int
	// Tenants, when set, keeps the tenant caps instead of the fields
	// above: give the engine the same (session.Config.Tenants), so that a
	// call the guard counted before its upgrade is not counted twice and
	// calls through every other door count against the same caps.
	Tenants tenant.Limits
	// Clock paces the tenants' turns and, unless they have a clock of
	// their own, tells CallTokens and a *JWT Auth the time (nil:
	// clock.System); give it the engine's (session.Engine.Clock) so
	// that one clock runs the server.
	Clock    clock.Clock
	Logger   *slog.Logger
	Registry *prometheus.Registry // receives frontdoor_guard_refused_total (nil: none)
}

// TenantCaps are the caps the config's fields set.
func (c Config) TenantCaps() tenant.Caps {
	return tenant.Caps{Sessions: c.TenantSessions, TurnsPerMinute: c.TenantTurnsPerMinute, TurnBurst: c.TenantTurnBurst}
}

// Side says which listener a handler serves: the public one or the
// operator one.
type Side int

// Sides.
const (
	Public Side = iota
	Operator
)

// Guard authenticates requests and holds the per-tenant counters.
type Guard struct {
	cfg     Config
	log     *slog.Logger
	refused *prometheus.CounterVec

	tenants tenant.Limits
}

// New returns a Guard.
func New(cfg Config) *Guard {
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.MaxTenants <= 0 {
		cfg.MaxTenants = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	// One clock for the guard: token expiry is read where turns are paced.
	// Set before the guard serves, so no request reads them meanwhile.
	if cfg.CallTokens != nil && cfg.CallTokens.Clock == nil {
		cfg.CallTokens.Clock = cfg.Clock
	}
	if j, ok := cfg.Auth.(*JWT); ok && j.Clock == nil {
		j.Clock = cfg.Clock
	}
	g := &Guard{cfg: cfg, log: cfg.Logger, tenants: cfg.Tenants}
	if g.tenants == nil {
		g.tenants = tenant.NewLocal(cfg.TenantCaps(), cfg.MaxTenants, cfg.Clock)
	}
	g.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "frontdoor_guard_refused_total",
		Help: "Requests the guard refused before the handler, by reason (unauthorized, forbidden, rate_limited, overloaded, subprotocol).",
	}, []string{"reason"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(g.refused)
	}
	return g
}

// route is what a path needs.
type route struct {
	role      Role
	telephony bool // the tenant comes from a call token in the path
	call      bool // a call: tenant caps and service overload apply
	operator  bool // served on the operator listener when it is separate
}

// classify returns the policy of a request path. Unknown paths are public
// here (the mux answers 404).
func classify(path string) route {
	switch {
	case path == "/v1/session", path == "/v1/webrtc" || strings.HasPrefix(path, "/v1/webrtc/"):
		return route{role: RoleCaller, call: true}
	case path == "/v1/twilio", strings.HasPrefix(path, "/v1/twilio/"):
		// Twilio cannot carry our bearer tokens: the tenant comes from a
		// signed call token in the path (calltoken.go), and the transport
		// validates X-Twilio-Signature itself.
		return route{call: true, telephony: true}
	case isGateway(path):
		// Neither can the other gateways: each presents the gateway token
		// (-gateway-token-env), which its transport checks. Their calls
		// pass the service's overload check like any other.
		return route{call: true}
	case path == CallTokenPath:
		return route{role: RoleOperator, operator: true}
	case path == "/v1/agents":
		return route{role: RoleAgent, operator: true}
	case path == "/v1/callbacks", strings.HasPrefix(path, "/v1/callbacks/"),
		path == "/v1/stages", strings.HasPrefix(path, "/v1/stages/"),
		path == "/metrics", path == "/v1/burst":
		return route{role: RoleOperator, operator: true}
	}
	return route{}
}

// isGateway reports whether path is a gateway dialect's stream endpoint,
// /v1/<dialect> (telephony.GatewayDialects).
func isGateway(path string) bool {
	d, ok := strings.CutPrefix(path, "/v1/")
	return ok && slices.Contains(telephony.GatewayDialects, d)
}

// CallTokenPath mints call tokens (POST, operator role): see mintHandler.
const CallTokenPath = "/v1/call-tokens"

// Handler wraps next (the session server's handler) for the listener l.
func (g *Guard) Handler(next http.Handler, l Side) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := classify(r.URL.Path)
		switch {
		case l == Public && g.cfg.OperatorSeparate && rt.operator,
			l == Operator && !rt.operator && r.URL.Path != "/healthz":
			http.NotFound(w, r)
			return
		}
		var id Identity
		var callTok *CallToken // spent only by the upgrade the guard admits
		if rt.role != RoleNone && g.cfg.Auth != nil {
			tok, _ := token(r)
			var err error
			id, err = g.cfg.Auth.Authenticate(tok)
			if err != nil {
				code := "unauthorized"
				if errors.Is(err, ErrExpired) {
					code = "token_expired"
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="frontdoor"`)
				g.refuse(w, http.StatusUnauthorized, "unauthorized", code, "a valid token is required")
				return
			}
			if !id.Has(rt.role) {
				g.refuse(w, http.StatusForbidden, "forbidden", "forbidden", "the token lacks the "+string(rt.role)+" role")
				return
			}
		}
		if rt.telephony {
			if g.cfg.VerifyTelephony != nil {
				if err := g.cfg.VerifyTelephony(r); err != nil {
					g.refuse(w, http.StatusForbidden, "twilio_signature", "twilio_signature", "bad X-Twilio-Signature")
					return
				}
			}
			tenant, tok, status, code, err := g.callTenant(r)
			if err != nil {
				g.refuse(w, status, "call_token", code, err.Error())
				return
			}
			id.Tenant, callTok = tenant, tok
		}
		if r.URL.Path == CallTokenPath {
			g.mint(w, r, id)
			return
		}
		if isUpgrade(r) {
			if p, ok := pickSubprotocol(r); !ok {
				g.refuse(w, http.StatusBadRequest, "subprotocol", "unsupported_subprotocol", "offered subprotocols include none this route accepts: "+acceptedSubprotocols(r.URL.Path))
				return
			} else if p != "" {
				// coder/websocket keeps a Sec-WebSocket-Protocol already
				// set and reports it as Conn.Subprotocol: the browser gets
				// one of the protocols it offered back, as it requires.
				w.Header().Set("Sec-WebSocket-Protocol", p)
			}
		}
		if !rt.call {
			next.ServeHTTP(w, r)
			return
		}
		release, ok, err := g.enter(r, id.Tenant)
		if err != nil {
			g.log.Error("tenant calls", "tenant", id.Tenant, "err", err)
			g.retryAfter(w)
			g.refuse(w, http.StatusServiceUnavailable, "overloaded", "overloaded", "the service cannot count this call; try again later")
			return
		}
		if !ok {
			g.retryAfter(w)
			g.refuse(w, http.StatusTooManyRequests, "rate_limited", "rate_limited", "your tenant is at its cap of calls at once")
			return
		}
		if g.cfg.Busy != nil && g.cfg.Busy() {
			release()
			g.retryAfter(w)
			g.refuse(w, http.StatusServiceUnavailable, "overloaded", "overloaded", "the service is full; try again later")
			return
		}
		// Only now, with every check passed, is the call token spent, and
		// only by an upgrade: a refused attempt or a plain GET (answered
		// 426 by the handler) leaves it usable until it expires.
		if callTok != nil && isUpgrade(r) {
			if err := callTok.Spend(r.Context()); err != nil {
				release()
				status, code := callTokenRefusal(err)
				g.refuse(w, status, "call_token", code, err.Error())
				return
			}
		}
		// The call counts against its tenant until it has ended, which
		// may be after next returns (the native WebSocket handler returns
		// once its call is accepted): tenant.WithCallEnd releases it then.
		ctx, handlerDone := tenant.WithCallEnd(r.Context(), release)
		defer handlerDone()
		if id.Tenant != "" {
			ctx = tenant.WithHeld(ctx, id.Tenant)
		}
		ctx = tenant.WithCaller(ctx, tenant.Caller{Tenant: id.Tenant, Source: sourceOf(r), AllowTurn: g.turnAllower(id.Tenant)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (g *Guard) retryAfter(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int((g.cfg.RetryAfter+time.Second-1)/time.Second))))
}

// refuse answers a request the guard will not pass on. The body is JSON:
// {"code": ..., "message": ...}.
func (g *Guard) refuse(w http.ResponseWriter, status int, reason, code, msg string) {
	g.refused.WithLabelValues(reason).Inc()
	w.Header().Del("Sec-WebSocket-Protocol")
	// A refused request's connection is not kept: a client without
	// credentials must not hold idle keep-alive connections (each one
	// counts against its address and the server's caps).
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

// enter counts a call against its tenant's cap, on the tenant limits the
// engine shares. The tenant "" (no authentication) has no cap.
func (g *Guard) enter(r *http.Request, name string) (release func(), ok bool, err error) {
	if name == "" {
		return func() {}, true, nil
	}
	release, err = g.tenants.EnterCall(r.Context(), name)
	switch {
	case err == nil:
		return release, true, nil
	case errors.Is(err, tenant.ErrFull):
		return nil, false, nil
	}
	return nil, false, err
}

// turnAllower paces a call's turns through the guard's own tenant limits,
// for an engine without Config.Tenants (which asks its own instead).
func (g *Guard) turnAllower(name string) func() bool {
	if name == "" {
		return nil
	}
	return func() bool { return g.tenants.AllowTurn(context.Background(), name) == nil }
}

// Sessions returns the tenant's calls at once (tests, metrics), when the
// guard's tenant limits are in process.
func (g *Guard) Sessions(tenantName string) int {
	if ts, ok := g.tenants.(interface{ Sessions(string) int }); ok {
		return ts.Sessions(tenantName)
	}
	return 0
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}
