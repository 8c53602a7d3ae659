package guard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Call token errors. The guard answers each 403 before the upgrade.
var (
	ErrCallToken         = errors.New("guard: call token not accepted")
	ErrCallTokenExpired  = errors.New("guard: call token expired")
	ErrCallTokenReplayed = errors.New("guard: call token already used")
	ErrCallTokenRequired = errors.New("guard: a call token is required")
	// ErrCallTokenBusy: too many unexpired tokens have been used to
	// remember another; refused rather than forgotten (a forgotten one
	// could be replayed).
	ErrCallTokenBusy = errors.New("guard: too many call tokens in use")
)

// MaxCallTokenTTL bounds a call token's life: it is a credential in a URL.
const MaxCallTokenTTL = time.Hour

// CallTokens mints and redeems the signed, short-lived, single-use tokens
// that carry a telephony call's tenant in its stream URL path
// (/v1/twilio/<token>). The application that answers the call mints one
// per call (frontdoor token, or POST /v1/call-tokens) and writes it into the
// TwiML's <Stream url>; the guard accepts it once, before it expires, and
// the call counts against that tenant. The gateway's own parameters
// (customParameters) are not signed and never name a tenant.
//
// Tokens used are remembered until they expire: in this process, or with
// Used in the fleet's store, so that one token is accepted once by the
// whole fleet.
type CallTokens struct {
	Secret []byte
	// Clock tells the time tokens are minted and redeemed at (nil:
	// clock.System); guard.New gives it the guard's when unset, so
	// that expiry runs on the one clock of the server.
	Clock clock.Clock
	// MaxUsed bounds the used tokens remembered (0: 100000).
	MaxUsed int
	// Used, when set, remembers spent tokens instead of this process (in
	// fleet mode, the store: stages/redisstage.UsedTokens), so that a
	// token is single-use across every replica. An error from it refuses
	// the call (503), never lets the token through twice.
	Used UsedTokens

	mu   sync.Mutex
	used map[string]time.Time // nonce -> expiry
}

// UsedTokens remembers spent call tokens outside the process.
type UsedTokens interface {
	// Used reports whether nonce has been spent.
	Used(ctx context.Context, nonce string) (bool, error)
	// Spend marks nonce spent until exp; fresh is false when it already
	// was.
	Spend(ctx context.Context, nonce string, exp time.Time) (fresh bool, err error)
}

type callClaims struct {
	Tenant string `json:"t"`
	Exp    int64  `json:"e"` // Unix seconds
	Nonce  string `json:"n"`
}

const callTokenContext = "frontdoor.call-token.v1."

func (ct *CallTokens) now() time.Time {
	if ct.Clock != nil {
		return ct.Clock.Now()
	}
	return clock.System.Now()
}

func (ct *CallTokens) sign(payload string) string {
	m := hmac.New(sha256.New, ct.Secret)
	m.Write([]byte(callTokenContext + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Mint returns a token for one call of tenant, valid for ttl (at most
// MaxCallTokenTTL). The token is URL-safe: letters, digits, '-', '_', '.'.
func (ct *CallTokens) Mint(tenant string, ttl time.Duration) (string, error) {
	if err := checkTenant(tenant); err != nil {
		return "", fmt.Errorf("guard: call token: %w", err)
	}
	if ttl <= 0 || ttl > MaxCallTokenTTL {
		return "", fmt.Errorf("guard: call token: ttl %v: want (0, %v]", ttl, MaxCallTokenTTL)
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", fmt.Errorf("guard: call token: %w", err)
	}
	b, err := json.Marshal(callClaims{Tenant: tenant, Exp: ct.now().Add(ttl).Unix(), Nonce: hex.EncodeToString(n[:])})
	if err != nil {
		return "", fmt.Errorf("guard: call token: %w", err)
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + ct.sign(payload), nil
}

// Redeem checks a token and spends it: it returns the tenant the first time
// a valid, unexpired token is presented, and ErrCallTokenReplayed after.
func (ct *CallTokens) Redeem(tok string) (tenant string, err error) {
	ctx := context.Background()
	c, err := ct.Check(ctx, tok)
	if err != nil {
		return "", err
	}
	if err := c.Spend(ctx); err != nil {
		return "", err
	}
	return c.Tenant, nil
}

// CallToken is a checked call token, not yet spent.
type CallToken struct {
	Tenant string
	ct     *CallTokens
	nonce  string
	exp    time.Time
}

// Check verifies a token without spending it: its signature, its expiry and
// that it has not been spent. The guard checks a stream's token before
// anything else and spends it only for the upgrade it admits (Spend), so
// that a refused attempt (tenant full, overloaded) or a request without
// the upgrade leaves it usable until it expires.
func (ct *CallTokens) Check(ctx context.Context, tok string) (CallToken, error) {
	payload, sig, ok := strings.Cut(tok, ".")
	if !ok || len(tok) > 1024 || !hmac.Equal([]byte(sig), []byte(ct.sign(payload))) {
		return CallToken{}, ErrCallToken
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return CallToken{}, ErrCallToken
	}
	var c callClaims
	if err := json.Unmarshal(b, &c); err != nil || c.Nonce == "" || checkTenant(c.Tenant) != nil {
		return CallToken{}, ErrCallToken
	}
	exp := time.Unix(c.Exp, 0)
	if !ct.now().Before(exp) {
		return CallToken{}, ErrCallTokenExpired
	}
	var seen bool
	if ct.Used != nil {
		if seen, err = ct.Used.Used(ctx, c.Nonce); err != nil {
			return CallToken{}, fmt.Errorf("%w: %w", ErrCallTokenBusy, err)
		}
	} else {
		ct.mu.Lock()
		_, seen = ct.used[c.Nonce]
		ct.mu.Unlock()
	}
	if seen {
		return CallToken{}, ErrCallTokenReplayed
	}
	return CallToken{Tenant: c.Tenant, ct: ct, nonce: c.Nonce, exp: exp}, nil
}

// Spend uses the token up: the first Spend of a token succeeds, every later
// one (of this token however presented) returns ErrCallTokenReplayed.
func (t CallToken) Spend(ctx context.Context) error {
	ct := t.ct
	now := ct.now()
	if !now.Before(t.exp) {
		return ErrCallTokenExpired
	}
	if ct.Used != nil {
		fresh, err := ct.Used.Spend(ctx, t.nonce, t.exp)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", ErrCallTokenBusy, err)
		case !fresh:
			return ErrCallTokenReplayed
		}
		return nil
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.used == nil {
		ct.used = map[string]time.Time{}
	}
	if _, seen := ct.used[t.nonce]; seen {
		return ErrCallTokenReplayed
	}
	max := ct.MaxUsed
	if max <= 0 {
		max = 100000
	}
	if len(ct.used) >= max {
		for n, e := range ct.used {
			if !now.Before(e) {
				delete(ct.used, n)
			}
		}
		if len(ct.used) >= max {
			return ErrCallTokenBusy
		}
	}
	ct.used[t.nonce] = t.exp
	return nil
}

// callTenant is the tenant of a telephony stream request, from the call
// token in its path, and the token to spend if the guard admits the
// upgrade (nil: none). Without a token the call has no tenant (no tenant
// caps), unless RequireCallToken refuses it.
func (g *Guard) callTenant(r *http.Request) (tenant string, tok *CallToken, status int, code string, err error) {
	raw, _ := strings.CutPrefix(strings.TrimPrefix(r.URL.Path, "/v1/twilio"), "/")
	switch {
	case raw == "" && g.cfg.RequireCallToken:
		return "", nil, http.StatusForbidden, "call_token_required", ErrCallTokenRequired
	case raw == "":
		return "", nil, 0, "", nil
	case g.cfg.CallTokens == nil:
		return "", nil, http.StatusForbidden, "bad_call_token", fmt.Errorf("%w: call tokens are not configured", ErrCallToken)
	}
	c, err := g.cfg.CallTokens.Check(r.Context(), raw)
	if err != nil {
		status, code := callTokenRefusal(err)
		return "", nil, status, code, err
	}
	return c.Tenant, &c, 0, "", nil
}

// callTokenRefusal is the answer to a token refused with err.
func callTokenRefusal(err error) (status int, code string) {
	switch {
	case errors.Is(err, ErrCallTokenExpired):
		return http.StatusForbidden, "call_token_expired"
	case errors.Is(err, ErrCallTokenReplayed):
		return http.StatusForbidden, "call_token_replayed"
	case errors.Is(err, ErrCallTokenBusy):
		return http.StatusServiceUnavailable, "overloaded"
	}
	return http.StatusForbidden, "bad_call_token"
}

// DefaultCallTokenTTL is the life of a minted call token when none is asked
// for: long enough for the gateway to open the stream after the TwiML.
const DefaultCallTokenTTL = 2 * time.Minute

// mint answers POST /v1/call-tokens {"tenant": "...", "ttl": "2m"} with
// {"token", "path", "expires"}: a token for one call of the caller's own
// tenant (a token with a tenant cannot mint for another; without
// authentication any tenant may be named).
func (g *Guard) mint(w http.ResponseWriter, r *http.Request, id Identity) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if g.cfg.CallTokens == nil {
		http.Error(w, "call tokens are not configured (-call-token-secret-env)", http.StatusNotFound)
		return
	}
	var req struct {
		Tenant string `json:"tenant"`
		TTL    string `json:"ttl"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	tenant := req.Tenant
	switch {
	case tenant == "":
		tenant = id.Tenant
	case id.Tenant != "" && tenant != id.Tenant:
		g.refuse(w, http.StatusForbidden, "forbidden", "forbidden", "a token may mint call tokens only for its own tenant")
		return
	}
	ttl := DefaultCallTokenTTL
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil {
			http.Error(w, "bad ttl", http.StatusBadRequest)
			return
		}
		ttl = d
	}
	tok, err := g.cfg.CallTokens.Mint(tenant, ttl)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]string{"token": tok, "path": "/v1/twilio/" + tok,
		"expires": g.cfg.CallTokens.now().Add(ttl).UTC().Format(time.RFC3339)})
}
