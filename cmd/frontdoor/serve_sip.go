package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/prometheus/client_golang/prometheus"
)

// sipSettings are the flags of SIP calls straight in (docs/TELEPHONY.md):
// a SIP user-agent server on UDP and TCP whose calls go through the same
// stages as every other transport.
type sipSettings struct {
	listen   string
	authFile string
	mediaIP  string

	maxCalls       int
	pendingPerAddr int
	tcpIdle        time.Duration
	tcpPerAddr     int
	tcpMax         int
	mediaTimeout   time.Duration
	retryAfter     time.Duration
	overload503    bool

	// admit, when set before start, is telephony.SIPConfig.Admit: the
	// hook that counts a SIP call against its tenant's caps (set by the
	// tenant guard's wiring, not a flag).
	admit func(context.Context) (context.Context, func(), error)
}

func sipFlags(fs *flag.FlagSet) *sipSettings {
	s := &sipSettings{}
	fs.IntVar(&s.maxCalls, "sip-max-calls", 1000, "SIP calls ringing or answered at once; an INVITE over it is answered 503 with Retry-After (a bound of the process, before admission)")
	fs.IntVar(&s.pendingPerAddr, "sip-pending-per-addr", 16, "INVITEs from one source address (an IPv6 /64) answered or ringing but not yet acknowledged; the next one is answered 503")
	fs.DurationVar(&s.tcpIdle, "sip-tcp-idle", 30*time.Second, "close a SIP TCP connection that carried no byte for this long and no call")
	fs.IntVar(&s.tcpPerAddr, "sip-tcp-per-addr", 32, "SIP TCP connections open at once from one address (an IPv6 /64); one more is closed at once")
	fs.IntVar(&s.tcpMax, "sip-tcp-max", 1024, "SIP TCP connections open at once")
	fs.DurationVar(&s.mediaTimeout, "sip-media-timeout", 30*time.Second, "hang up a SIP call whose caller has sent no RTP for this long")
	fs.DurationVar(&s.retryAfter, "sip-retry-after", 5*time.Second, "the Retry-After of a SIP 503 (whole seconds)")
	fs.BoolVar(&s.overload503, "sip-overload-503", false, "answer a new INVITE 503 with Retry-After while the session stage is full (no slot, no waiting place), so that a trunk fails over (default: answer it, play the refusal prompt and offer a callback)")
	fs.StringVar(&s.listen, "sip-listen", "", "answer SIP calls on this address, UDP and TCP (host:port, e.g. 127.0.0.1:5060; empty: no SIP)")
	fs.StringVar(&s.authFile, "sip-auth-file", "", "digest-authenticate SIP callers against this file: a \"realm NAME\" line, then one \"user password [tenant]\" line per caller (a user without a tenant names it in the request URI)")
	fs.StringVar(&s.mediaIP, "sip-media-ip", "", "the address SIP calls' RTP is received on and the SDP answer names (default: the -sip-listen host, which must then be specific)")
	return s
}

// Errors of a -sip-auth-file.
var (
	errSIPAuthRealm  = errors.New("the first line must be \"realm NAME\"")
	errSIPAuthFields = errors.New("want \"user password [tenant]\"")
	errSIPAuthUser   = errors.New("user name has a quote, backslash or colon")
	errSIPAuthDup    = errors.New("user listed twice")
	errSIPAuthTenant = errors.New("tenant must be 1-64 letters, digits, '+', '.', '_' or '-'")
	errSIPAuthEmpty  = errors.New("no users")
)

// SIPAuthFileError is a bad line of a -sip-auth-file; Line is 1-based (0:
// the file as a whole).
type SIPAuthFileError struct {
	Path string
	Line int
	Err  error
}

func (e *SIPAuthFileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("-sip-auth-file %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("-sip-auth-file %s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *SIPAuthFileError) Unwrap() error { return e.Err }

// readSIPAuth reads an auth file: blank lines and lines starting with #
// are skipped; the first other line is "realm NAME"; each one after is
// "user password [tenant]". A user with a tenant is pinned to it; one
// without is a trunk whose calls name their tenant in the request URI
// (sip:acme@frontdoor). Passwords cannot hold spaces.
func readSIPAuth(r io.Reader, path string) (*sip.Auth, error) {
	fail := func(line int, err error) error { return &SIPAuthFileError{Path: path, Line: line, Err: err} }
	a := &sip.Auth{Users: map[string]sip.User{}}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if a.Realm == "" {
			if len(f) != 2 || f[0] != "realm" || strings.ContainsAny(f[1], "\"\\") {
				return nil, fail(n, errSIPAuthRealm)
			}
			a.Realm = f[1]
			continue
		}
		if len(f) < 2 || len(f) > 3 {
			return nil, fail(n, errSIPAuthFields)
		}
		if strings.ContainsAny(f[0], "\"\\:") {
			return nil, fail(n, errSIPAuthUser)
		}
		if _, dup := a.Users[f[0]]; dup {
			return nil, fail(n, fmt.Errorf("%w: %q", errSIPAuthDup, f[0]))
		}
		u := sip.User{Password: f[1]}
		if len(f) == 3 {
			if !sip.ValidTenant(f[2]) {
				return nil, fail(n, fmt.Errorf("%w: %q", errSIPAuthTenant, f[2]))
			}
			u.Tenant = f[2]
		}
		a.Users[f[0]] = u
	}
	if err := sc.Err(); err != nil {
		return nil, fail(n+1, err)
	}
	if a.Realm == "" {
		return nil, fail(0, errSIPAuthRealm)
	}
	if len(a.Users) == 0 {
		return nil, fail(0, errSIPAuthEmpty)
	}
	return a, nil
}

// sipConfig checks the SIP flags and returns the server's configuration
// (its Handler left to start); ok is false without -sip-listen.
func (s *sipSettings) config(log *slog.Logger) (cfg sip.Config, ok bool, err error) {
	if s.listen == "" {
		if s.authFile != "" || s.mediaIP != "" {
			return cfg, false, usageError{errors.New("-sip-auth-file and -sip-media-ip need -sip-listen")}
		}
		return cfg, false, nil
	}
	ap, err := netip.ParseAddrPort(s.listen)
	if err != nil {
		return cfg, false, usageError{fmt.Errorf("-sip-listen %q: want ip:port (%v)", s.listen, err)}
	}
	if s.mediaIP != "" {
		if cfg.MediaIP, err = netip.ParseAddr(s.mediaIP); err != nil {
			return cfg, false, usageError{fmt.Errorf("-sip-media-ip %q: %v", s.mediaIP, err)}
		}
	} else if ap.Addr().IsUnspecified() {
		return cfg, false, usageError{fmt.Errorf("-sip-listen %s is every address: set -sip-media-ip to the one RTP is reached on", s.listen)}
	}
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"-sip-max-calls", int64(s.maxCalls)}, {"-sip-pending-per-addr", int64(s.pendingPerAddr)},
		{"-sip-tcp-per-addr", int64(s.tcpPerAddr)}, {"-sip-tcp-max", int64(s.tcpMax)},
		{"-sip-tcp-idle", int64(s.tcpIdle)}, {"-sip-media-timeout", int64(s.mediaTimeout)},
	} {
		if b.v <= 0 {
			return cfg, false, usageError{fmt.Errorf("%s must be positive", b.name)}
		}
	}
	if s.retryAfter < time.Second {
		return cfg, false, usageError{errors.New("-sip-retry-after must be at least 1s")}
	}
	cfg.MaxCalls, cfg.MaxPendingPerAddr = s.maxCalls, s.pendingPerAddr
	cfg.TCPIdle, cfg.MaxTCPPerAddr, cfg.MaxTCP = s.tcpIdle, s.tcpPerAddr, s.tcpMax
	cfg.RetryAfter = s.retryAfter
	if s.authFile != "" {
		f, err := os.Open(s.authFile)
		if err != nil {
			return cfg, false, fmt.Errorf("-sip-auth-file: %w", err)
		}
		defer f.Close()
		if cfg.Auth, err = readSIPAuth(f, s.authFile); err != nil {
			return cfg, false, err
		}
		cfg.Tenant = sip.TenantFromUserOrRequestURI
	} else {
		cfg.Tenant = sip.TenantFromRequestURI
		if !ap.Addr().IsLoopback() {
			log.Warn("-sip-listen on a non-loopback address without -sip-auth-file: anyone who reaches it may call, naming any tenant in the request URI", "sip_listen", s.listen)
		}
	}
	cfg.Logger = log
	return cfg, true, nil
}

// start serves SIP calls on the engine until the returned server is
// closed (nil without -sip-listen). ctx bounds only the start: a drain
// lets SIP calls in progress go on like every other call.
// prompts is the rendered prompt audio the SIP calls share with the other
// telephony endpoints (sc's).
func (s *sipSettings) start(ctx context.Context, e *session.Engine, prompts *telephony.PromptCache, log *slog.Logger) (*sip.Server, error) {
	cfg, ok, err := s.config(log)
	if !ok || err != nil {
		return nil, err
	}
	cfg.Handler = telephony.NewSIPHandler(e, telephony.SIPConfig{Logger: log, Prompts: prompts, MediaTimeout: s.mediaTimeout, Admit: s.admit})
	cfg.Busy = sipBusy(e, s.overload503)
	// One clock for nonces, the RTP's arrival and the media timeout.
	cfg.Clock = e.Clock()
	srv, err := sip.Listen(context.WithoutCancel(ctx), s.listen, cfg)
	if err != nil {
		return nil, fmt.Errorf("-sip-listen %s: %w", s.listen, err)
	}
	if err := registerSIPMetrics(e.Registry(), srv); err != nil {
		_ = srv.Close()
		return nil, err
	}
	users := 0
	if cfg.Auth != nil {
		users = len(cfg.Auth.Users)
	}
	log.Info("sip listening", "addr", srv.Addr().String(), "transports", "udp,tcp", "auth_users", users)
	return srv, nil
}

// sipBusy is when a new INVITE is answered 503 with Retry-After: while
// the engine drains (a trunk fails over to another replica at once,
// instead of its callers hearing that the service closes), and with
// overload, while the session stage has neither a slot nor a waiting
// place.
func sipBusy(e *session.Engine, overload bool) func() bool {
	return func() bool {
		return !e.Ready() || overload && e.SessionFull()
	}
}

// registerSIPMetrics exports the SIP server's refusals and drops
// (sip.Stats) as counters on reg.
func registerSIPMetrics(reg *prometheus.Registry, srv *sip.Server) error {
	counter := func(name, help string, labels prometheus.Labels, v func(sip.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v(srv.Stats())) })
	}
	const refused = "frontdoor_sip_refused_total"
	const refusedHelp = "SIP requests answered 503 (busy: draining, -sip-overload-503 or -sip-max-calls; pending: -sip-pending-per-addr) and TCP connections closed at once (tcp: -sip-tcp-per-addr, -sip-tcp-max)."
	for _, c := range []prometheus.Collector{
		counter(refused, refusedHelp, prometheus.Labels{"reason": "busy"}, func(s sip.Stats) uint64 { return s.RefusedBusy }),
		counter(refused, refusedHelp, prometheus.Labels{"reason": "pending"}, func(s sip.Stats) uint64 { return s.RefusedPending }),
		counter(refused, refusedHelp, prometheus.Labels{"reason": "tcp"}, func(s sip.Stats) uint64 { return s.TCPRefused }),
		counter("frontdoor_sip_digest_replays_total", "SIP INVITEs whose digest Authorization reused a nonce and nc already used (answered 401, stale=true).", nil,
			func(s sip.Stats) uint64 { return s.DigestReplays }),
		counter("frontdoor_sip_tcp_idle_closed_total", "SIP TCP connections closed after -sip-tcp-idle without a byte or a call.", nil,
			func(s sip.Stats) uint64 { return s.TCPIdleClosed }),
		counter("frontdoor_sip_rtp_foreign_total", "Datagrams to a SIP call's RTP port from anywhere but the call's source, dropped.", nil,
			func(s sip.Stats) uint64 { return s.RTPForeign }),
		counter("frontdoor_sip_rtp_withheld_total", "RTP packets not sent because the caller's SDP address had not proven it wants them.", nil,
			func(s sip.Stats) uint64 { return s.RTPWithheld }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("sip metrics: %w", err)
		}
	}
	return nil
}

// closeSIP ends the SIP calls left (BYE) and closes the server, if any.
func closeSIP(s *sip.Server) {
	if s != nil {
		_ = s.Close()
	}
}
