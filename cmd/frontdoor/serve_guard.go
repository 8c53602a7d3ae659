package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session/guard"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/session/tenant"
)

// guardWiring puts package guard in front of frontdoor serve: its flags,
// the tenant share of every stage's queue, the origin policy, the hardened
// HTTP server(s) and the connection-limiting listener(s).
type guardWiring struct {
	set  guard.Settings
	auth guard.Authenticator
	lims guard.ServerLimits // set.Server with -trusted-proxies parsed
	// calls signs and redeems telephony call tokens (nil: none).
	calls *guard.CallTokens
	// overloadHTTP answers a new caller 503 before the upgrade when the
	// session stage is full. Off by default: the caller is upgraded and
	// refused over the protocol, so it hears the truthful prompt and can
	// take a callback or a handoff.
	overloadHTTP bool
	limits       *callerLimits // serve_limits.go
	// healthListen serves /healthz and /readyz alone on a listener of
	// their own, which no caller's flood on the public one can reach.
	healthListen string
	// allowOpenGateways lets serve start with authentication on and a
	// gateway route that proves nothing (openGateways).
	allowOpenGateways bool
	// tenants are the tenant caps the guard (before the upgrade) and the
	// engine (at every call's and turn's start, on every transport) share.
	tenants tenant.Limits
}

func newGuardWiring(fs *flag.FlagSet) *guardWiring {
	w := &guardWiring{set: guard.DefaultSettings()}
	w.set.Flags(fs)
	w.limits = callerLimitFlags(fs)
	fs.StringVar(&w.healthListen, "health-listen", "", "also serve /healthz and /readyz (nothing else) on this address, with connection caps of its own: health checks there keep answering whatever floods the public listener (unset: none)")
	fs.BoolVar(&w.allowOpenGateways, "allow-open-gateways", false, "with -auth apikey or jwt, start even though a gateway route admits calls from anyone: /v1/twilio without -twilio-auth-token or -call-token-required, the other gateway routes without -gateway-token-env, -audiosocket-listen on a public address (default: refuse to start)")
	fs.BoolVar(&w.overloadHTTP, "overload-http", false, "answer a new caller 503 with Retry-After before the upgrade when the session stage is full (default: refuse over the protocol with a prompt and a callback or handoff offer)")
	return w
}

// prepare checks the settings, builds the authenticator and gives every
// stage its per-tenant share of the queue. It runs before session.New.
func (w *guardWiring) prepare(set *serveSettings, log *slog.Logger, lookup func(string) (string, bool)) error {
	auth, err := w.set.Authenticator(lookup)
	if err != nil {
		return err
	}
	w.auth = auth
	if w.lims, err = w.set.Limits(); err != nil {
		return err
	}
	if w.calls, err = w.set.CallTokens(lookup); err != nil {
		return err
	}
	cfg := w.set.Config(auth)
	w.tenants = tenant.NewLocal(cfg.TenantCaps(), cfg.MaxTenants, nil)
	w.limits.tenants = w.tenants
	if open := openGateways(set, w.set.RequireCallToken); auth != nil && len(open) > 0 {
		if !w.allowOpenGateways {
			return usageError{fmt.Errorf("%w: %s", errOpenGateways, strings.Join(open, "; "))}
		}
		log.Warn("-auth "+w.set.Auth+" with -allow-open-gateways: anyone may call through these routes", "open", open)
	}
	for _, l := range []*struct {
		name string
		w    *int
		n    int
	}{
		{"session", &set.session.TenantWaiting, set.session.Waiting},
		{"recognize", &set.recognize.TenantWaiting, set.recognize.Waiting},
		{"model", &set.model.TenantWaiting, set.model.Waiting},
		{"synth", &set.synth.TenantWaiting, set.synth.Waiting},
	} {
		if *l.w, err = w.set.Share(l.n); err != nil {
			return err
		}
	}
	if auth == nil {
		if host, _, _ := net.SplitHostPort(set.listen); !isLoopback(host) {
			log.Warn("-auth none on a non-loopback address: anyone who reaches it may call and read operator data", "listen", set.listen)
		}
	}
	log.Info("guard", "auth", w.set.Auth, "allowed_origins", w.set.Origins(), "operator_listen", w.set.OperatorListen,
		"tenant_sessions", w.set.TenantSessions, "tenant_turns_per_minute", w.set.TenantTurnsPerMinute,
		"tenant_queue_share", w.set.TenantQueueShare, "max_conns", w.set.Server.MaxConns,
		"max_conns_per_addr", w.set.Server.MaxConnsPerAddr, "max_handshakes_per_addr", w.set.Server.MaxHandshakesPerAddr,
		"trusted_proxies", w.set.TrustedProxies, "call_tokens", w.calls != nil, "call_token_required", w.set.RequireCallToken)
	return nil
}

// errOpenGateways refuses to start with authentication on and a gateway
// route that admits calls before anyone has proved anything: each such
// stream would take a session slot that authenticated callers need.
var errOpenGateways = errors.New("-auth leaves gateway routes open to anyone (set their credentials, or -allow-open-gateways to accept it)")

// openGateways names the gateway routes that admit a call without proof
// of the gateway: a signature, a call token or the gateway token.
func openGateways(set *serveSettings, callTokenRequired bool) []string {
	var open []string
	if set.media.twilio.AuthToken == "" && !callTokenRequired {
		open = append(open, "/v1/twilio (-twilio-auth-token with -twilio-public-url, or -call-token-required)")
	}
	if set.gateway.tokenEnv == "" {
		open = append(open, "/v1/"+strings.Join(telephony.GatewayDialects, ", /v1/")+" (-gateway-token-env)")
	}
	if a := set.gateway.audioListen; a != "" {
		host, _, _ := net.SplitHostPort(a)
		if ip := net.ParseIP(host); ip == nil || !(ip.IsLoopback() || ip.IsPrivate()) {
			open = append(open, "AudioSocket on "+a+" (it has no authentication: listen on a loopback or private address)")
		}
	}
	return open
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// origins are the cross-origin host patterns for every WebSocket endpoint.
func (w *guardWiring) origins() []string { return w.set.Origins() }

// agentAccept is the /v1/agents handshake's options (origin policy).
func (w *guardWiring) agentAccept() *websocket.AcceptOptions {
	return &websocket.AcceptOptions{OriginPatterns: w.set.Origins()}
}

// healthLimits are the health listener's: its own few connections, each
// answered and closed promptly, none shared with callers.
var healthLimits = guard.ServerLimits{
	ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
	IdleTimeout: 10 * time.Second, MaxHeaderBytes: 4 << 10, MaxConns: 64, MaxConnsPerAddr: 16, MaxHandshakesPerAddr: 8,
	ConnIdle: 10 * time.Second,
}

// healthOnly serves h's /healthz and /readyz, and 404 for anything else.
func healthOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// guardServers are the running HTTP server(s).
type guardServers struct{ servers []*http.Server }

// Shutdown shuts every server down.
func (g *guardServers) Shutdown(ctx context.Context) error {
	var errs []error
	for _, s := range g.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// serve starts the public server on ln (and the operator server on
// -operator-listen) behind the guard. served receives the first Serve
// error.
func (w *guardWiring) serve(ln net.Listener, srv *server.Server, reg *prometheus.Registry, log *slog.Logger) (*guardServers, <-chan error, error) {
	cfg := w.set.Config(w.auth)
	if w.overloadHTTP {
		cfg.Busy = srv.SessionFull
	}
	cfg.Logger = log
	cfg.Registry = reg
	cfg.CallTokens = w.calls
	cfg.Tenants = w.tenants
	// The engine's clock, which serve gives the backends too: pacing,
	// call-token expiry and JWT exp/nbf read the one clock of the server.
	cfg.Clock = srv.Engine.Clock()
	cfg.VerifyTelephony = srv.VerifyTwilio
	g := guard.New(cfg)
	lims := w.lims
	type pair struct {
		ln net.Listener
		hs *http.Server
	}
	ps := []pair{{lims.Listen(ln), lims.NewServer(g.Handler(srv.Handler(), guard.Public), log)}}
	if w.set.OperatorListen != "" {
		oln, err := net.Listen("tcp", w.set.OperatorListen)
		if err != nil {
			return nil, nil, fmt.Errorf("-operator-listen: %w", err)
		}
		ps = append(ps, pair{lims.Listen(oln), lims.NewServer(g.Handler(srv.Handler(), guard.Operator), log)})
		log.Info("operator listening", "addr", oln.Addr().String())
	}
	if w.healthListen != "" {
		hln, err := net.Listen("tcp", w.healthListen)
		if err != nil {
			return nil, nil, fmt.Errorf("-health-listen: %w", err)
		}
		ps = append(ps, pair{healthLimits.Listen(hln), healthLimits.NewServer(healthOnly(srv.Handler()), log)})
		log.Info("health listening", "addr", hln.Addr().String())
	}
	served := make(chan error, len(ps))
	gs := &guardServers{}
	for _, p := range ps {
		gs.servers = append(gs.servers, p.hs)
		go func() { served <- p.hs.Serve(p.ln) }()
	}
	return gs, served, nil
}
