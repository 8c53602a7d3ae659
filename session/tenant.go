package session

import (
	"context"
	"errors"
)

// Caller is who a call belongs to, as the layer in front of the server
// (package session/guard) authenticated it. It travels in the request's
// context (WithCaller) into the call: the call's session and turn jobs carry
// its Tenant (stages.Job.Tenant, so each stage's per-tenant queue share
// applies), and every turn asks AllowTurn first.
type Caller struct {
	Tenant string
	// AllowTurn reports whether the tenant may start another turn now
	// (nil: always). A refused turn ends the call: `error` rate_limited,
	// then close 1008 — the tenant is at fault, not the service.
	AllowTurn func() bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller in ctx (zero: no tenant, no turn limit).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// ErrRateLimited ends a call whose tenant is over its turn rate.
var ErrRateLimited = errors.New("session: tenant over its turn rate")

// CodeRateLimited is the ErrorMsg code sent before a call is closed (1008)
// for its tenant's turn rate.
const CodeRateLimited = "rate_limited"

// allowTurn asks the call's Caller whether another turn may start. When it
// may not, the caller is told (`error` rate_limited) and the call is ended
// with ErrRateLimited (close 1008 once the error is out).
func (c *Call) allowTurn() bool {
	allow := CallerFrom(c.ctx).AllowTurn
	if allow == nil || allow() {
		return true
	}
	c.s.m.protocolErrs.WithLabelValues(CodeRateLimited).Inc()
	_ = c.Send(c.ctx, &ErrorMsg{Type: "error", Code: CodeRateLimited, Message: "your tenant is over its turns per minute"})
	c.stop(ErrRateLimited)
	return false
}

func (c *Call) tenant() string { return CallerFrom(c.ctx).Tenant }

// SessionFull reports whether the session stage has neither a free slot nor
// a waiting place, so that a new caller would be refused overloaded. A
// closed stage (drain) is not full: closed callers are told so over the
// WebSocket (`session` closed, 1013).
func (s *Engine) SessionFull() bool {
	sn := s.snapshot(s.session)
	return !sn.Closed && sn.Leased >= sn.Limits.Slots && sn.Queued >= sn.Limits.Waiting
}
