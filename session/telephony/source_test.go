package telephony

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestTenantCapsAudioSocketListener: AudioSocket calls accepted with no
// tenant in their context (as `frontdoor serve -audiosocket-listen` accepts
// them) count against the listener's tenant
// (GatewayConfig.AudioSocketTenant, -audiosocket-tenant): the tenant's
// third call is refused and its turn rate held.
func TestTenantCapsAudioSocketListener(t *testing.T) {
	t.Parallel()
	r := capsRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checkTenantCaps(t, r, func(tenant string) capsCall {
		h := NewAudioSocketHandler(r.Engine, GatewayConfig{AudioSocketTenant: tenant})
		return audioSocketCall(ctx, t, h, context.Background()) // no Caller: the listener's tenant
	})
}

// callerSpy is the engine's Fallback, noting the Caller each refusal's
// call carries.
type callerSpy struct {
	session.Prompts
	mu      sync.Mutex
	callers []tenant.Caller
}

func (s *callerSpy) Refused(ctx context.Context, r session.Refusal, out session.Sender) {
	s.mu.Lock()
	s.callers = append(s.callers, tenant.CallerFrom(ctx))
	s.mu.Unlock()
	s.Prompts.Refused(ctx, r, out)
}

func (s *callerSpy) seen() []tenant.Caller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tenant.Caller(nil), s.callers...)
}

// TestGatewaySource: a gateway call, one naming its tenant at its start
// included, carries its peer's address as its Caller's Source (what the
// booking caps of callbacks and handoffs count by), with no guard in
// front to set it; so does an AudioSocket call.
func TestGatewaySource(t *testing.T) {
	t.Parallel()
	spy := &callerSpy{}
	r := newRig(t, func(c *session.Config, _ *stub.Settings) {
		c.Fallback = spy
		c.Session = stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Minute}
	}, rigGateway(func(gc *GatewayConfig) { gc.Token = capsToken }))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := dialects[0] // plivo
	r.gatewayFor(ctx, d, 2, map[string]string{"token": capsToken})
	sessiontest.WaitFor(t, "the first call admitted", func() bool { return r.Engine.Calls() == 1 && len(spy.seen()) == 0 })
	// The second waits in the session queue: its Refused (queued) shows
	// its Caller.
	r.gatewayFor(ctx, d, 2, map[string]string{"token": capsToken, "tenant": "acme"})
	sessiontest.WaitFor(t, "the second call queued", func() bool { return len(spy.seen()) == 1 })
	if c := spy.seen()[0]; c.Tenant != "acme" || c.Source != "127.0.0.1" {
		t.Fatalf("gateway call's Caller %+v, want tenant acme from 127.0.0.1", c)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(context.Background())
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		NewAudioSocketHandler(r.Engine, GatewayConfig{AudioSocketTenant: "pbx"}).ServeAudioSocket(sctx, c, 8000)
	})
	t.Cleanup(func() { stop(); ln.Close(); wg.Wait() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	g, err := gatewaytest.New(ctx, audiosocket.NewLink(conn), audiosocket.Codec{}, gatewaytest.Options{
		Start: gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c", CallID: "call-2"}, Speed: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	sessiontest.WaitFor(t, "the AudioSocket call queued", func() bool { return len(spy.seen()) == 2 })
	if c := spy.seen()[1]; c.Tenant != "pbx" || c.Source != "127.0.0.1" {
		t.Fatalf("AudioSocket call's Caller %+v, want tenant pbx from 127.0.0.1", c)
	}
}

func TestSourceOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7:5060":                   "192.0.2.7",
		"192.0.2.7":                        "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":       "2001:db8:1:2::",
		"[::ffff:192.0.2.7]:80":            "192.0.2.7",
		"not an address":                   "",
		"2001:db8:1:2:ffff:ffff:ffff:ffff": "2001:db8:1:2::",
	} {
		if got := tenant.SourceOf(in); got != want {
			t.Errorf("SourceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
