package guard

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Auth modes of -auth.
const (
	AuthNone   = "none"
	AuthAPIKey = "apikey"
	AuthJWT    = "jwt"
)

// Settings are the command-line settings of the guard (frontdoor serve).
type Settings struct {
	Auth      string // none, apikey or jwt
	KeysFile  string // apikey: the keys file (ReadAPIKeys)
	SecretEnv string // jwt: the environment variable holding the HMAC secret
	Issuer    string // jwt: required iss, if set
	Audience  string // jwt: required aud, if set

	AllowedOrigins string // comma-separated host patterns (path.Match) allowed cross-origin
	OperatorListen string // separate listener for agent and operator paths ("": same listener, by role)

	TenantSessions       int
	TenantTurnsPerMinute float64
	TenantTurnBurst      int
	TenantQueueShare     string // fraction of each queue ("0.5") or a count ("10"); "0": none

	CallTokenSecretEnv string // env var holding the call-token HMAC secret ("" or unset: no call tokens)
	RequireCallToken   bool   // a telephony stream without a call token is refused

	Server ServerLimits
	// TrustedProxies: comma-separated addresses and CIDR prefixes whose
	// X-Forwarded-For is believed (Limits parses it into the ServerLimits).
	TrustedProxies string
}

// DefaultSettings are frontdoor serve's defaults.
func DefaultSettings() Settings {
	return Settings{
		Auth: AuthNone, SecretEnv: "FRONTDOOR_JWT_SECRET", CallTokenSecretEnv: DefaultCallTokenSecretEnv,
		TenantSessions: 20, TenantTurnsPerMinute: 120, TenantTurnBurst: 20,
		TenantQueueShare: "0.5",
		Server:           DefaultServerLimits,
	}
}

// Flags registers the settings on fs with s's values as defaults.
func (s *Settings) Flags(fs *flag.FlagSet) {
	fs.StringVar(&s.Auth, "auth", s.Auth, "who may call: none (development on loopback only), apikey (-auth-keys) or jwt (HMAC secret in the env var named by -jwt-secret-env)")
	fs.StringVar(&s.KeysFile, "auth-keys", s.KeysFile, "-auth apikey: file of \"tenant roles key\" lines (roles: caller,agent,operator; key may be sha256:HEX)")
	fs.StringVar(&s.SecretEnv, "jwt-secret-env", s.SecretEnv, "-auth jwt: name of the environment variable holding the HMAC secret (at least 32 bytes)")
	fs.StringVar(&s.Issuer, "jwt-issuer", s.Issuer, "-auth jwt: required iss claim (empty: not checked)")
	fs.StringVar(&s.Audience, "jwt-audience", s.Audience, "-auth jwt: required aud claim (empty: not checked)")
	fs.StringVar(&s.CallTokenSecretEnv, "call-token-secret-env", s.CallTokenSecretEnv, "name of the environment variable holding the secret (32+ bytes) that signs telephony call tokens (/v1/twilio/<token>, minted by frontdoor token or POST /v1/call-tokens); unset: no call tokens")
	fs.BoolVar(&s.RequireCallToken, "call-token-required", s.RequireCallToken, "refuse a telephony stream (/v1/twilio) whose URL carries no call token (403)")
	fs.StringVar(&s.AllowedOrigins, "allowed-origins", s.AllowedOrigins, "comma-separated host patterns (path.Match, e.g. *.example.com) allowed to open WebSockets cross-origin; empty: same origin only")
	fs.StringVar(&s.OperatorListen, "operator-listen", s.OperatorListen, "separate address for /metrics, /v1/stages, /v1/callbacks, /v1/agents and /v1/burst (empty: served on -listen, by role)")
	fs.IntVar(&s.TenantSessions, "tenant-sessions", s.TenantSessions, "calls at once per tenant; over it 429 before the upgrade (0: no cap)")
	fs.Float64Var(&s.TenantTurnsPerMinute, "tenant-turns-per-minute", s.TenantTurnsPerMinute, "turns per minute per tenant across its calls; over it the call gets error rate_limited and close 1008 (0: no limit)")
	fs.IntVar(&s.TenantTurnBurst, "tenant-turn-burst", s.TenantTurnBurst, "turns a tenant may start at once before -tenant-turns-per-minute paces it")
	fs.StringVar(&s.TenantQueueShare, "tenant-queue-share", s.TenantQueueShare, "the most of each stage's queue one tenant may hold: a fraction (0.5) or a count (10); 0: no share")
	fs.DurationVar(&s.Server.ReadHeaderTimeout, "read-header-timeout", s.Server.ReadHeaderTimeout, "time allowed for a request's headers, the WebSocket handshake included")
	fs.DurationVar(&s.Server.ReadTimeout, "read-timeout", s.Server.ReadTimeout, "time allowed to read a plain (non-WebSocket) request")
	fs.DurationVar(&s.Server.WriteTimeout, "write-timeout", s.Server.WriteTimeout, "time allowed to write a plain (non-WebSocket) answer")
	fs.DurationVar(&s.Server.IdleTimeout, "idle-timeout", s.Server.IdleTimeout, "keep-alive connection idle between requests")
	fs.IntVar(&s.Server.MaxHeaderBytes, "max-header-bytes", s.Server.MaxHeaderBytes, "largest request header")
	fs.IntVar(&s.Server.MaxConns, "max-conns", s.Server.MaxConns, "connections open at once per listener; the next is answered 503 and closed (0: no bound)")
	fs.IntVar(&s.Server.MaxConnsPerAddr, "max-conns-per-addr", s.Server.MaxConnsPerAddr, "connections open at once from one source address; the next is answered 429 and closed (0: no bound)")
	fs.IntVar(&s.Server.MaxHandshakesPerAddr, "max-handshakes-per-addr", s.Server.MaxHandshakesPerAddr, "connections from one source address still sending their first request (slowloris); the next is answered 429 and closed (0: no bound)")
	fs.IntVar(&s.Server.ProbeConns, "probe-conns", s.Server.ProbeConns, "connections taken over -max-conns and the per-address caps to serve only /healthz, /readyz and /metrics (0: none)")
	fs.IntVar(&s.Server.WriteBuffer, "conn-write-buffer", s.Server.WriteBuffer, "kernel send buffer of each connection in bytes, so that a caller who stops reading is found soon after (0: the system's, megabytes)")
	fs.StringVar(&s.TrustedProxies, "trusted-proxies", s.TrustedProxies, "comma-separated proxy addresses or CIDR prefixes whose X-Forwarded-For names the client for the per-address caps (empty: X-Forwarded-For is ignored)")
	fs.DurationVar(&s.Server.ConnIdle, "conn-idle-timeout", s.Server.ConnIdle, "a connection (WebSocket included) from which nothing arrives for this long is cut (0: never)")
}

// Limits returns the server limits with -trusted-proxies parsed.
func (s *Settings) Limits() (ServerLimits, error) {
	l := s.Server
	ps, err := ParsePrefixes(s.TrustedProxies)
	if err != nil {
		return l, fmt.Errorf("-trusted-proxies: %w", err)
	}
	l.TrustedProxies = ps
	return l, nil
}

// Origins returns the -allowed-origins patterns.
func (s *Settings) Origins() []string {
	var o []string
	for _, p := range strings.Split(s.AllowedOrigins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o = append(o, p)
		}
	}
	return o
}

// Authenticator builds the -auth authenticator (nil for none). lookup
// reads the environment.
func (s *Settings) Authenticator(lookup func(string) (string, bool)) (Authenticator, error) {
	switch s.Auth {
	case AuthNone:
		return nil, nil
	case AuthAPIKey:
		if s.KeysFile == "" {
			return nil, errors.New("-auth apikey needs -auth-keys")
		}
		return LoadAPIKeys(s.KeysFile)
	case AuthJWT:
		secret, ok := lookup(s.SecretEnv)
		if !ok || len(secret) < MinSecret {
			return nil, fmt.Errorf("-auth jwt: environment variable %s must hold a secret of at least %d bytes", s.SecretEnv, MinSecret)
		}
		return &JWT{Secret: []byte(secret), Issuer: s.Issuer, Audience: s.Audience, Leeway: 5 * time.Second}, nil
	}
	return nil, fmt.Errorf("-auth %q: want none, apikey or jwt", s.Auth)
}

// DefaultCallTokenSecretEnv names the call-token secret's environment
// variable by default (serve and frontdoor token).
const DefaultCallTokenSecretEnv = "FRONTDOOR_CALL_TOKEN_SECRET"

// CallTokens builds the call-token signer from -call-token-secret-env (nil
// when the variable is unset; an error when it is too short, or unset while
// -call-token-required).
func (s *Settings) CallTokens(lookup func(string) (string, bool)) (*CallTokens, error) {
	secret, ok := "", false
	if s.CallTokenSecretEnv != "" {
		secret, ok = lookup(s.CallTokenSecretEnv)
	}
	switch {
	case !ok && s.RequireCallToken:
		return nil, fmt.Errorf("-call-token-required: environment variable %q (-call-token-secret-env) must hold the call-token secret", s.CallTokenSecretEnv)
	case !ok:
		return nil, nil
	case len(secret) < MinSecret:
		return nil, fmt.Errorf("-call-token-secret-env: environment variable %s must hold a secret of at least %d bytes", s.CallTokenSecretEnv, MinSecret)
	}
	return &CallTokens{Secret: []byte(secret)}, nil
}

// Share returns the per-tenant waiting cap (stages.Limits.TenantWaiting)
// of a queue of waiting places under -tenant-queue-share: a fraction f in
// (0, 1) gives ceil(f*waiting), a count n >= 1 gives min(n, waiting), 0
// gives 0 (no share).
func (s *Settings) Share(waiting int) (int, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s.TenantQueueShare), 64)
	switch {
	case err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("-tenant-queue-share %q: want a fraction in (0, 1), a count or 0", s.TenantQueueShare)
	case v == 0:
		return 0, nil
	case v < 1:
		return max(1, int(math.Ceil(v*float64(waiting)))), nil
	case v != math.Trunc(v):
		return 0, fmt.Errorf("-tenant-queue-share %q: a count must be whole", s.TenantQueueShare)
	}
	return min(int(v), waiting), nil
}

// Config returns the Guard configuration of these settings.
func (s *Settings) Config(auth Authenticator) Config {
	return Config{Auth: auth, OperatorSeparate: s.OperatorListen != "",
		TenantSessions: s.TenantSessions, TenantTurnsPerMinute: s.TenantTurnsPerMinute, TenantTurnBurst: s.TenantTurnBurst,
		RequireCallToken: s.RequireCallToken}
}
