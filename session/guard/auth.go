package guard

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/golang-jwt/jwt/v5"
)

// Role is what a token allows.
type Role string

// Roles. A path needs at most one; a token may hold several.
const (
	RoleNone     Role = ""         // public: the page, health checks
	RoleCaller   Role = "caller"   // /v1/session, /v1/webrtc
	RoleAgent    Role = "agent"    // /v1/agents, the human agents' console
	RoleOperator Role = "operator" // /v1/callbacks, /v1/stages, /metrics, /v1/burst
)

func parseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleCaller, RoleAgent, RoleOperator:
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want caller, agent or operator)", s)
}

// Identity is who a token belongs to.
type Identity struct {
	Tenant  string
	Subject string // the key's name or the JWT's sub
	Roles   []Role
}

// Has reports whether the identity holds role r.
func (id Identity) Has(r Role) bool {
	for _, x := range id.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// Authentication errors. All of them are answered 401.
var (
	ErrNoToken  = errors.New("guard: no token")
	ErrBadToken = errors.New("guard: token not accepted")
	ErrExpired  = errors.New("guard: token expired")
)

// Authenticator checks a token. It returns ErrBadToken or ErrExpired
// (possibly wrapped) for a token it does not accept.
type Authenticator interface {
	Authenticate(token string) (Identity, error)
}

// MaxTenant bounds a tenant name: it ends up in metrics and queue shares.
const MaxTenant = 64

func checkTenant(t string) error {
	if t == "" || len(t) > MaxTenant {
		return fmt.Errorf("tenant must be 1 to %d bytes", MaxTenant)
	}
	for _, r := range t {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("tenant %q: only letters, digits, '-', '_' and '.'", t)
		}
	}
	return nil
}

// APIKeys authenticates static API keys. Keys are kept only as SHA-256
// digests; a lookup compares digests in constant time.
type APIKeys struct {
	keys []apiKey
}

type apiKey struct {
	sum [sha256.Size]byte
	id  Identity
}

// ReadAPIKeys parses a keys file: one key a line, "tenant roles key" with
// roles comma-separated (caller,agent,operator) and key either the key
// itself or "sha256:" and the hex digest of the key. Blank lines and lines
// starting with # are skipped. A key must be at least 16 bytes and use
// only characters allowed in a WebSocket subprotocol token.
func ReadAPIKeys(r io.Reader) (*APIKeys, error) {
	k := &APIKeys{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("guard: keys line %d: want \"tenant roles key\"", n)
		}
		if err := checkTenant(f[0]); err != nil {
			return nil, fmt.Errorf("guard: keys line %d: %w", n, err)
		}
		id := Identity{Tenant: f[0], Subject: fmt.Sprintf("key:%s:%d", f[0], n)}
		for _, s := range strings.Split(f[1], ",") {
			r, err := parseRole(s)
			if err != nil {
				return nil, fmt.Errorf("guard: keys line %d: %w", n, err)
			}
			id.Roles = append(id.Roles, r)
		}
		var sum [sha256.Size]byte
		if hx, ok := strings.CutPrefix(f[2], "sha256:"); ok {
			b, err := hex.DecodeString(hx)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("guard: keys line %d: bad sha256 digest", n)
			}
			copy(sum[:], b)
		} else {
			if len(f[2]) < 16 || !tokenChars(f[2]) {
				return nil, fmt.Errorf("guard: keys line %d: a key needs 16 or more letters, digits or -._~", n)
			}
			sum = sha256.Sum256([]byte(f[2]))
		}
		k.keys = append(k.keys, apiKey{sum: sum, id: id})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("guard: keys: %w", err)
	}
	if len(k.keys) == 0 {
		return nil, errors.New("guard: keys file has no key")
	}
	return k, nil
}

// LoadAPIKeys reads a keys file (ReadAPIKeys).
func LoadAPIKeys(path string) (*APIKeys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	defer f.Close()
	return ReadAPIKeys(f)
}

// Authenticate implements Authenticator.
func (k *APIKeys) Authenticate(token string) (Identity, error) {
	if token == "" {
		return Identity{}, ErrNoToken
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range k.keys { // every key is compared: no early exit to time
		if subtle.ConstantTimeCompare(sum[:], k.keys[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, ErrBadToken
	}
	return k.keys[found].id, nil
}

// JWT authenticates HMAC-signed JSON Web Tokens (HS256, HS384, HS512).
// A token needs exp, and a "tenant" and a "roles" claim; iss and aud are
// checked when set here.
type JWT struct {
	Secret   []byte
	Issuer   string
	Audience string
	Leeway   time.Duration
	// Clock tells the time exp and nbf are checked at (nil:
	// clock.System); guard.New gives it the guard's when unset.
	Clock clock.Clock
}

// Claims are the claims a frontdoor JWT carries.
type Claims struct {
	Tenant string   `json:"tenant"`
	Roles  []string `json:"roles"`
	jwt.RegisteredClaims
}

// MinSecret is the shortest HMAC secret accepted (bytes).
const MinSecret = 32

// Sign returns a signed HS256 token for c (tests, tooling).
func (j *JWT) Sign(c Claims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(j.Secret)
}

// Authenticate implements Authenticator.
func (j *JWT) Authenticate(token string) (Identity, error) {
	if token == "" {
		return Identity{}, ErrNoToken
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256", "HS384", "HS512"}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(j.Leeway),
	}
	if j.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(j.Issuer))
	}
	if j.Audience != "" {
		opts = append(opts, jwt.WithAudience(j.Audience))
	}
	if j.Clock != nil {
		opts = append(opts, jwt.WithTimeFunc(j.Clock.Now))
	}
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return j.Secret, nil }, opts...)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Identity{}, fmt.Errorf("%w: %w", ErrExpired, err)
	case err != nil:
		return Identity{}, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if err := checkTenant(c.Tenant); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	id := Identity{Tenant: c.Tenant, Subject: c.Subject}
	for _, s := range c.Roles {
		r, err := parseRole(s)
		if err != nil {
			return Identity{}, fmt.Errorf("%w: %w", ErrBadToken, err)
		}
		id.Roles = append(id.Roles, r)
	}
	return id, nil
}

// tokenChars reports whether s may travel in a subprotocol (RFC 7230
// token), a header and a query parameter unescaped.
func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}
