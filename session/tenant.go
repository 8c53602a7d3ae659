package session

import (
	"context"
	"errors"
	"sync"

	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// enterTenant counts the call against its tenant's calls at once, unless
// the layer in front did. It is the first thing a call's admission does,
// on every transport. A tenant at its cap is told (`error` rate_limited)
// and the call ended with tenant.ErrFull; a count that cannot be kept
// refuses the call closed. The place is given back when the call stops.
func (c *Call) enterTenant(ctx context.Context) bool {
	lim, name := c.s.cfg.Tenants, c.tenant()
	if lim == nil || name == "" {
		return true
	}
	if tenant.Held(ctx) == name {
		return true
	}
	release, err := lim.EnterCall(ctx, name)
	switch {
	case err == nil:
		c.leaveTenant = sync.OnceFunc(release)
		context.AfterFunc(c.ctx, c.leaveTenant)
		return true
	case errors.Is(err, tenant.ErrFull):
		c.s.m.ProtocolErrs.WithLabelValues(tenant.CodeRateLimited).Inc()
		_ = c.Send(ctx, &wire.ErrorMsg{Type: "error", Code: tenant.CodeRateLimited, Message: "your tenant is at its cap of calls at once"})
		c.stop(tenant.ErrFull)
	default:
		c.log.Error("tenant calls", "tenant", name, "err", err)
		c.refuseSession(ctx, stages.Closed)
	}
	return false
}

// allowTurn asks the call's tenant limits (or its Caller) whether another
// turn may start. When it may not, the caller is told (`error`
// rate_limited) and the call is ended with tenant.ErrRateLimited (close 1008 once
// the error is out). A limit that cannot be read lets the turn go on: its
// stages, kept in the same store, refuse it closed if the store is gone.
func (c *Call) allowTurn() bool {
	if c.turnAllowed() {
		return true
	}
	c.s.m.ProtocolErrs.WithLabelValues(tenant.CodeRateLimited).Inc()
	_ = c.Send(c.ctx, &wire.ErrorMsg{Type: "error", Code: tenant.CodeRateLimited, Message: "your tenant is over its turns per minute"})
	c.stop(tenant.ErrRateLimited)
	return false
}

func (c *Call) turnAllowed() bool {
	if lim := c.s.cfg.Tenants; lim != nil {
		name := c.tenant()
		if name == "" {
			return true
		}
		err := lim.AllowTurn(c.ctx, name)
		if err != nil && !errors.Is(err, tenant.ErrRateLimited) {
			c.log.Warn("tenant turn rate", "tenant", name, "err", err)
			return true
		}
		return err == nil
	}
	allow := tenant.CallerFrom(c.ctx).AllowTurn
	return allow == nil || allow()
}

func (c *Call) tenant() string { return tenant.CallerFrom(c.ctx).Tenant }

// SessionFull reports whether the session stage has neither a free slot nor
// a waiting place, so that a new caller would be refused overloaded. A
// closed stage (drain) is not full: closed callers are told so over the
// WebSocket (`session` closed, 1013).
func (s *Engine) SessionFull() bool {
	sn := s.snapshot(s.session)
	return !sn.Closed && sn.Leased >= sn.Limits.Slots && sn.Queued >= sn.Limits.Waiting
}
