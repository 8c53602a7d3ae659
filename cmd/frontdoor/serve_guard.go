package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/guard"
	"github.com/frontdoorhq/frontdoor/session/server"
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
	// tenants are the tenant caps the guard (before the upgrade) and the
	// engine (at every call's and turn's start, on every transport) share.
	tenants session.TenantLimits
}

func newGuardWiring(fs *flag.FlagSet) *guardWiring {
	w := &guardWiring{set: guard.DefaultSettings()}
	w.set.Flags(fs)
	w.limits = callerLimitFlags(fs)
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
	w.tenants = session.NewLocalTenants(cfg.TenantCaps(), cfg.MaxTenants, nil)
	w.limits.tenants = w.tenants
	if auth != nil && set.media.twilio.AuthToken == "" && !w.set.RequireCallToken {
		log.Warn("-auth "+w.set.Auth+" leaves /v1/twilio open: anyone may stream a call there; set -twilio-auth-token (and -twilio-public-url) or -call-token-required",
			"call_tokens", w.calls != nil)
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
	served := make(chan error, len(ps))
	gs := &guardServers{}
	for _, p := range ps {
		gs.servers = append(gs.servers, p.hs)
		go func() { served <- p.hs.Serve(p.ln) }()
	}
	return gs, served, nil
}
