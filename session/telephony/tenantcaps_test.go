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
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

const capsToken = "gateway-token-for-tenant-caps"

// capsRig is a rig whose engine holds every tenant to 2 calls at once and
// one turn (a burst of 1 at 6 a minute, on a clock that does not move, so
// that no turn is given back while the test runs), with no guard in
// front: what holds here holds because the engine applies the caps itself,
// whatever door the call came in by.
func capsRig(t *testing.T) *rig {
	t.Helper()
	lim := tenant.NewLocal(tenant.Caps{Sessions: 2, TurnsPerMinute: 6, TurnBurst: 1}, 0,
		stagestest.NewClock(time.Unix(1e9, 0)))
	return newRig(t, func(c *session.Config, _ *stub.Settings) {
		c.Tenants = lim
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
	}, rigGateway(func(gc *GatewayConfig) { gc.Token = capsToken }))
}

// capsCall is one call of a transport under test: its end, and a way to
// say something and hear the reply start.
type capsCall interface {
	// ended reports whether the call has been ended by the server.
	ended() bool
	// turn says "hello" and waits for the reply's first audio (or the
	// call's end, when the turn was refused).
	turn(ctx context.Context, t *testing.T)
}

// checkTenantCaps runs the same story on one transport: acme's two calls
// are admitted; its third is ended rate_limited without reaching the
// session stage; beta's call is admitted meanwhile; acme's first call has
// its one turn answered, and its second turn ends it rate_limited.
func checkTenantCaps(t *testing.T, r *rig, dial func(tenant string) capsCall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leased := func() int { return r.stage(session.StageSession).Leased }
	a := dial("acme")
	dial("acme")
	sessiontest.WaitFor(t, "acme's two calls admitted", func() bool { return leased() == 2 })
	third := dial("acme")
	sessiontest.WaitFor(t, "acme's third call ended", third.ended)
	// The engine counts a call's end once it has closed the transport.
	sessiontest.WaitFor(t, "acme's third call counted rate_limited", func() bool { return callsEnded(t, r, "rate_limited") == 1 })
	if offered := r.stage(session.StageSession).Ledger.Offered; offered != 2 {
		t.Fatalf("the session stage was offered %d calls, want acme's 2 (the third refused before it)", offered)
	}
	dial("beta")
	sessiontest.WaitFor(t, "beta's call admitted beside acme's two", func() bool { return leased() == 3 })

	a.turn(ctx, t)
	if a.ended() {
		t.Fatal("acme's first turn ended its call")
	}
	a.turn(ctx, t)
	sessiontest.WaitFor(t, "acme's call ended by its second turn", a.ended)
	sessiontest.WaitFor(t, "acme's call counted rate_limited", func() bool { return callsEnded(t, r, "rate_limited") == 2 })
}

// gatewayCall is a call through a gateway dialect (gatewaytest).
type gatewayCall struct{ g *gatewaytest.Gateway }

func (c gatewayCall) ended() bool { return c.g.Snapshot().Err != nil }

func (c gatewayCall) turn(ctx context.Context, t *testing.T) {
	t.Helper()
	rate := c.g.Start().Format.SampleRate
	before := c.g.Snapshot().Received
	if err := c.g.SendPCM(ctx, append(sessiontest.Speech(t, "hello-8k.wav", rate), silence(600*time.Millisecond, rate)...)); err != nil {
		// A refused turn ends the call: the write may fail before the
		// reader has seen the close, so the end is waited for.
		if _, werr := c.g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil }); werr != nil {
			t.Fatalf("%v, and the call did not end: %v", err, werr)
		}
		return
	}
	if _, err := c.g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil || s.Received > before }); err != nil {
		t.Fatal(err)
	}
}

// TestTenantCapsGateways: on every gateway dialect whose start can name a
// tenant (behind the gateway token), the tenant's third call is refused
// and its turn rate held.
func TestTenantCapsGateways(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		if d.tcp || d.noParams {
			continue // AudioSocket below; Asterisk's plain-text control names no tenant
		}
		t.Run(d.test(), func(t *testing.T) {
			t.Parallel()
			r := capsRig(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			checkTenantCaps(t, r, func(tenant string) capsCall {
				return gatewayCall{r.gatewayFor(ctx, d, 2, map[string]string{"tenant": tenant, "token": capsToken})}
			})
		})
	}
}

// TestTenantCapsAudioSocket: AudioSocket's protocol carries no
// parameters; its listener gives the call a tenant in the context (as
// the native route's guard does), and the engine holds that tenant's caps.
func TestTenantCapsAudioSocket(t *testing.T) {
	t.Parallel()
	r := capsRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checkTenantCaps(t, r, func(name string) capsCall {
		return audioSocketCall(ctx, t, r.audio, tenant.WithCaller(context.Background(), tenant.Caller{Tenant: name}))
	})
}

// audioSocketCall serves one AudioSocket connection with h on a loopback
// listener, its call's context derived from base, and dials it as
// Asterisk would; everything ends when the test does.
func audioSocketCall(ctx context.Context, t *testing.T, h *GatewayHandler, base context.Context) capsCall {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(base)
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		h.ServeAudioSocket(sctx, c, 8000)
	})
	t.Cleanup(func() { stop(); ln.Close(); wg.Wait() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	g, err := gatewaytest.New(ctx, audiosocket.NewLink(conn), audiosocket.Codec{}, gatewaytest.Options{
		Start: gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c", CallID: "call-1"}, Speed: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return gatewayCall{g}
}

// sipCapsCall is a SIP call (sip.Dial) whose request URI names its tenant.
type sipCapsCall struct{ c *sipCaller }

func (c sipCapsCall) ended() bool {
	select {
	case <-c.c.Done():
		return true
	default:
		return false
	}
}

func (c sipCapsCall) turn(ctx context.Context, t *testing.T) {
	t.Helper()
	// RTP flows both ways all along: the reply is the first loud frames.
	_, before := c.c.received()
	if err := c.c.WritePCM(append(sessiontest.Speech(t, "hello-8k.wav", 8000), make([]int16, 4800)...)); err != nil {
		// As on a gateway: the write may fail before the end is seen.
		sessiontest.WaitFor(t, "the call's end after a failed write ("+err.Error()+")", c.ended)
		return
	}
	sessiontest.WaitFor(t, "a reply or the call's end", func() bool {
		_, loud := c.c.received()
		return c.ended() || loud > before
	})
}

// TestTenantCapsSIP: a SIP call's tenant (its request URI's user) counts
// against the same caps.
func TestTenantCapsSIP(t *testing.T) {
	t.Parallel()
	r := capsRig(t)
	s := sipServer(t, r.Engine, sip.Config{}, SIPConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checkTenantCaps(t, r, func(tenant string) capsCall {
		return sipCapsCall{dialSIP(ctx, t, s, tenant, sip.DialConfig{})}
	})
}
