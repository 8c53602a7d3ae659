package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sentinel errors that callers branch on with errors.Is. Adapters return them
// inside an *Error that says which backend failed and how.
var (
	// ErrOverloaded: the backend refused for lack of capacity (HTTP 429 or
	// 503). Error.RetryAfter holds its Retry-After hint, if any.
	ErrOverloaded = errors.New("backend overloaded")
	// ErrUnavailable: the backend could not be reached (connection refused,
	// DNS failure, connection reset, missing executable) or failed with
	// another 5xx status.
	ErrUnavailable = errors.New("backend unavailable")
	// ErrStalled: the backend made no progress within the stall timeout.
	ErrStalled = errors.New("backend stalled")
	// ErrMalformed: the backend answered with something that could not be
	// understood (a bad stream chunk, bad JSON, a bad WAV header).
	ErrMalformed = errors.New("backend response malformed")
	// ErrRejected: the backend refused the request itself (a 4xx status
	// other than 429, such as a bad key or an unknown model): retrying the
	// same request will not help.
	ErrRejected = errors.New("backend rejected request")
)

// Kind classifies the outcome of a backend call, for callers and metrics.
type Kind string

// Kinds. KindOK is a success; KindCanceled and KindDeadline are the caller's
// own context ending, not a backend fault; KindEmit is the emit callback's
// error; KindOther is anything unclassified.
const (
	KindOK          Kind = "ok"
	KindOverloaded  Kind = "overloaded"
	KindUnavailable Kind = "unavailable"
	KindStalled     Kind = "stalled"
	KindMalformed   Kind = "malformed"
	KindRejected    Kind = "rejected"
	KindCanceled    Kind = "canceled"
	KindDeadline    Kind = "deadline"
	KindEmit        Kind = "emit"
	KindOther       Kind = "other"
)

func (k Kind) sentinel() error {
	switch k {
	case KindOverloaded:
		return ErrOverloaded
	case KindUnavailable:
		return ErrUnavailable
	case KindStalled:
		return ErrStalled
	case KindMalformed:
		return ErrMalformed
	case KindRejected:
		return ErrRejected
	case KindCanceled:
		return context.Canceled
	case KindDeadline:
		return context.DeadlineExceeded
	}
	return nil
}

// Error is a typed backend failure. errors.Is(err, ErrOverloaded) and the
// like hold according to Kind; Unwrap gives the underlying cause.
type Error struct {
	Kind    Kind
	Backend string // e.g. "openai", "espeak"
	Op      string // e.g. "reply", "synthesize"
	// Status is the HTTP status code, when there was one.
	Status int
	// RetryAfter is the backend's Retry-After hint (0 if none).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Backend)
	if e.Op != "" {
		b.WriteString(" " + e.Op)
	}
	b.WriteString(": ")
	if s := e.Kind.sentinel(); s != nil {
		b.WriteString(s.Error())
	} else {
		b.WriteString(string(e.Kind))
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	s := e.Kind.sentinel()
	return s != nil && s == target
}

// KindOf classifies err: KindOK for nil, the Kind of an *Error in its chain,
// KindCanceled or KindDeadline for a context error, else KindOther.
func KindOf(err error) Kind {
	if err == nil {
		return KindOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindDeadline
	}
	for _, k := range []Kind{KindOverloaded, KindUnavailable, KindStalled, KindMalformed, KindRejected} {
		if errors.Is(err, k.sentinel()) {
			return k
		}
	}
	return KindOther
}

// EmitError wraps the error returned by an emit callback, so that it reads
// as the caller's own stop and errors.Is still finds the original.
func EmitError(backend, op string, err error) error {
	return &Error{Kind: KindEmit, Backend: backend, Op: op, Err: err}
}

// StatusError classifies an HTTP error status: 429 and 503 are overloaded
// (with Retry-After parsed from h, a date read against now), other 5xx
// unavailable, other 4xx rejected. detail is a short description of the
// body, if any.
func StatusError(backend, op string, status int, h http.Header, now time.Time, detail error) *Error {
	e := &Error{Backend: backend, Op: op, Status: status, Err: detail}
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		e.Kind = KindOverloaded
		if h != nil {
			e.RetryAfter = ParseRetryAfter(h.Get("Retry-After"), now)
		}
	case status >= 500:
		e.Kind = KindUnavailable
	case status >= 400:
		e.Kind = KindRejected
	default:
		e.Kind = KindMalformed // a non-error status where an error was seen
	}
	return e
}

// ParseRetryAfter parses a Retry-After header value (delay seconds or an
// HTTP date, relative to now). It returns 0 for an empty, invalid or past
// value, and caps the hint at one hour so a bad header cannot park a caller.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 || n != n {
			return 0
		}
		if n > 3600 {
			n = 3600
		}
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, time.Hour))
}

// IsUnreachable reports whether err is a failure to reach or keep a
// connection: refused, reset, DNS, dial or network timeout. Adapters map it
// to ErrUnavailable.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}
