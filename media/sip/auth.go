package sip

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/icholy/digest"
)

// Auth turns on RFC 3261 digest authentication (MD5, qop=auth) of INVITEs.
type Auth struct {
	Realm string          // the protection realm callers are challenged with
	Users map[string]User // by user name
	// NonceTTL is how long a challenge's nonce may be answered; default 5
	// minutes. An older one is challenged again with stale=true.
	NonceTTL time.Duration
}

// User is one caller allowed in by digest authentication.
type User struct {
	Password string
	Tenant   string // the call's tenant with TenantFromUser
}

// Errors of authentication. A Handler never sees a call that failed it: the
// server answers 401 or 403 itself.
var (
	errNoCredentials = errors.New("sip: no digest credentials")
	errStaleNonce    = errors.New("sip: stale nonce")
	errBadNonce      = errors.New("sip: nonce not issued by this server")
	errBadResponse   = errors.New("sip: wrong digest response")
	errUnknownUser   = errors.New("sip: unknown user")
	// errReplay: a nonce used again without qop=auth, or with an nc not
	// above the last one used with it.
	errReplay = errors.New("sip: digest replayed")
)

// authenticator issues nonces and checks digest answers. A nonce carries
// its issue time and an HMAC of it under a per-server key, so only nonces
// this server issued are taken and only for NonceTTL; the nonces that
// were answered are remembered with the highest nc used (RFC 7616 section
// 3.3), so that an Authorization captured and sent again is refused.
// Only a correct answer is remembered: what an unauthenticated sender can
// make the server keep is nothing.
type authenticator struct {
	realm string
	users map[string]User
	ttl   time.Duration
	now   func() time.Time
	key   [32]byte

	mu    sync.Mutex
	max   int                 // nonces remembered at most
	used  map[string]nonceUse // by nonce
	order []string            // used's nonces, oldest use first
	floor time.Time           // nonces issued before it are stale (forgotten)
}

// nonceUse is what is remembered of a nonce that was answered.
type nonceUse struct {
	issued time.Time
	nc     uint32 // the highest nc used; 0 for an answer without qop
}

func newAuthenticator(a *Auth, now func() time.Time, maxNonces int) (*authenticator, error) {
	if a.Realm == "" {
		return nil, fmt.Errorf("%w: Auth.Realm is empty", ErrConfig)
	}
	if strings.ContainsAny(a.Realm, "\"\\\r\n") {
		return nil, fmt.Errorf("%w: Auth.Realm %q has a quote, backslash or line break", ErrConfig, a.Realm)
	}
	ttl := a.NonceTTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	au := &authenticator{realm: a.Realm, users: a.Users, ttl: ttl, now: now, max: max(maxNonces, 1), used: map[string]nonceUse{}}
	if _, err := rand.Read(au.key[:]); err != nil {
		return nil, fmt.Errorf("sip: nonce key: %w", err)
	}
	return au, nil
}

// nonce is the issue time, 8 random bytes (two challenges in the same
// clock tick differ) and an HMAC of both.
func (a *authenticator) nonce() string {
	var b [nonceLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(a.now().UnixNano()))
	_, _ = rand.Read(b[8:16])
	mac := hmac.New(sha256.New, a.key[:])
	mac.Write(b[:16])
	copy(b[16:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

const nonceLen = 8 + 8 + 16

// checkNonce returns when n was issued, if this server issued it and it
// is not stale.
func (a *authenticator) checkNonce(n string) (time.Time, error) {
	b, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(b) != nonceLen {
		return time.Time{}, errBadNonce
	}
	mac := hmac.New(sha256.New, a.key[:])
	mac.Write(b[:16])
	if !hmac.Equal(mac.Sum(nil)[:16], b[16:]) {
		return time.Time{}, errBadNonce
	}
	issued := time.Unix(0, int64(binary.BigEndian.Uint64(b[:8])))
	if age := a.now().Sub(issued); age < 0 || age > a.ttl {
		return time.Time{}, errStaleNonce
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if issued.Before(a.floor) {
		return time.Time{}, errStaleNonce
	}
	return issued, nil
}

// use records a correct answer with nonce n (issued then) and nc, or
// reports errReplay: a nonce is used once without qop, and with qop=auth
// with a growing nc.
func (a *authenticator) use(n string, issued time.Time, qop string, nc uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if issued.Before(a.floor) {
		return errStaleNonce
	}
	prev, seen := a.used[n]
	if seen && (qop == "" || nc <= prev.nc) {
		return fmt.Errorf("%w: nc %08x after %08x", errReplay, nc, prev.nc)
	}
	if seen {
		prev.nc = nc
		a.used[n] = prev
		return nil
	}
	a.forget()
	a.used[n] = nonceUse{issued: issued, nc: nc}
	a.order = append(a.order, n)
	return nil
}

// forget drops the remembered nonces that have expired, oldest use
// first, and then, while the bound is reached, the oldest ones, taking
// every nonce issued up to theirs for stale from then on; a.mu is held.
func (a *authenticator) forget() {
	now := a.now()
	i := 0
	for ; i < len(a.order); i++ {
		u := a.used[a.order[i]]
		expired := now.Sub(u.issued) > a.ttl
		if !expired && len(a.used) < a.max {
			break
		}
		if !expired && !u.issued.Before(a.floor) {
			a.floor = u.issued.Add(1) // forgotten while valid: stale from now on
		}
		delete(a.used, a.order[i])
	}
	a.order = a.order[i:]
	if len(a.order) < cap(a.order)/4 { // give back what a burst grew
		a.order = append([]string(nil), a.order...)
	}
}

// challenge is the WWW-Authenticate value for a 401.
func (a *authenticator) challenge(stale bool) string {
	c := digest.Challenge{
		Realm:     a.realm,
		Nonce:     a.nonce(),
		Algorithm: "MD5",
		QOP:       []string{"auth"},
		Stale:     stale,
	}
	return c.String()
}

// verify checks an Authorization header value for method; it returns the
// user name and entry on success.
func (a *authenticator) verify(header, method string) (string, User, error) {
	if header == "" {
		return "", User{}, errNoCredentials
	}
	if len(header) > 4096 {
		return "", User{}, fmt.Errorf("%w: Authorization of %d bytes", errBadResponse, len(header))
	}
	cr, err := digest.ParseCredentials(header)
	if err != nil {
		return "", User{}, fmt.Errorf("%w: %v", errBadResponse, err)
	}
	if cr.Realm != a.realm {
		return "", User{}, fmt.Errorf("%w: realm %q", errBadResponse, cr.Realm)
	}
	if alg := strings.ToUpper(cr.Algorithm); alg != "" && alg != "MD5" {
		return "", User{}, fmt.Errorf("%w: algorithm %q", errBadResponse, cr.Algorithm)
	}
	if cr.QOP != "" && cr.QOP != "auth" {
		return "", User{}, fmt.Errorf("%w: qop %q", errBadResponse, cr.QOP)
	}
	if cr.QOP == "auth" && cr.Nc == 0 {
		return "", User{}, fmt.Errorf("%w: qop=auth without nc", errBadResponse)
	}
	issued, err := a.checkNonce(cr.Nonce)
	if err != nil {
		return "", User{}, err
	}
	u, ok := a.users[cr.Username]
	if !ok {
		return "", User{}, fmt.Errorf("%w: %q", errUnknownUser, cr.Username)
	}
	want := digestResponse(cr, u.Password, method)
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(cr.Response))) != 1 {
		return "", User{}, errBadResponse
	}
	if err := a.use(cr.Nonce, issued, cr.QOP, uint32(cr.Nc)); err != nil {
		return "", User{}, err
	}
	return cr.Username, u, nil
}

// digestResponse computes RFC 2617's request-digest (RFC 3261 section 22.4).
func digestResponse(cr *digest.Credentials, password, method string) string {
	h := func(s string) string {
		sum := md5.Sum([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	ha1 := h(cr.Username + ":" + cr.Realm + ":" + password)
	ha2 := h(method + ":" + cr.URI)
	if cr.QOP == "" {
		return h(ha1 + ":" + cr.Nonce + ":" + ha2)
	}
	return h(fmt.Sprintf("%s:%s:%08x:%s:%s:%s", ha1, cr.Nonce, cr.Nc, cr.Cnonce, cr.QOP, ha2))
}
