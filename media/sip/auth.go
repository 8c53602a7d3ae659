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
)

// authenticator issues nonces and checks digest answers. Nonces are
// stateless: the issue time and an HMAC of it under a per-server key.
type authenticator struct {
	realm string
	users map[string]User
	ttl   time.Duration
	now   func() time.Time
	key   [32]byte
}

func newAuthenticator(a *Auth, now func() time.Time) (*authenticator, error) {
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
	au := &authenticator{realm: a.Realm, users: a.Users, ttl: ttl, now: now}
	if _, err := rand.Read(au.key[:]); err != nil {
		return nil, fmt.Errorf("sip: nonce key: %w", err)
	}
	return au, nil
}

func (a *authenticator) nonce() string {
	var b [8 + 16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(a.now().UnixNano()))
	mac := hmac.New(sha256.New, a.key[:])
	mac.Write(b[:8])
	copy(b[8:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (a *authenticator) checkNonce(n string) error {
	b, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(b) != 24 {
		return errBadNonce
	}
	mac := hmac.New(sha256.New, a.key[:])
	mac.Write(b[:8])
	if !hmac.Equal(mac.Sum(nil)[:16], b[8:]) {
		return errBadNonce
	}
	issued := time.Unix(0, int64(binary.BigEndian.Uint64(b[:8])))
	if age := a.now().Sub(issued); age < 0 || age > a.ttl {
		return errStaleNonce
	}
	return nil
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
	if err := a.checkNonce(cr.Nonce); err != nil {
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
