package telephony

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// TestGatewayKeypadCallback: on every dialect that carries keys and the
// caller's number, a refused caller hears the menu, presses 1, hears the
// callback confirmed and is hung up; the callback is booked to its number.
func TestGatewayKeypadCallback(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		if !d.caps().DTMF || d.noParams {
			continue
		}
		t.Run(d.test(), func(t *testing.T) {
			k := newKeypad(t, keypadOptions{window: 10 * time.Second})
			k.logs.dumpOnFailure(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g := k.gatewayFor(ctx, d, -1, map[string]string{"tenant": "acme", callerParam: "+15550142"})
			if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return echoedPrefix(s.Echoed, "menu~") }); err != nil {
				t.Fatalf("menu not played: %v (said %v)", err, k.saidOn(d.name))
			}
			if got := k.saidTextOn(d.name, "menu~"); got != menuBoth {
				t.Fatalf("menu %q, want %q", got, menuBoth)
			}
			if err := g.SendDTMF(ctx, "1"); err != nil {
				t.Fatal(err)
			}
			s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			if !echoedPrefix(s.Echoed, "callback-queued~") {
				t.Fatalf("hung up before the confirmation played: echoed %v (%v)", s.Echoed, s.Err)
			}
			cbs, err := k.svc.ListCallbacks(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(cbs) != 1 || cbs[0].Number != "+15550142" || cbs[0].Status != fallback.StatusPending {
				t.Fatalf("callbacks %+v", cbs)
			}
			if out := k.logs.find(d.name + ": keypad outcome"); len(out) != 1 || out[0]["ticket"] != cbs[0].Ref {
				t.Fatalf("outcome %v, ticket %s", out, cbs[0].Ref)
			}
		})
	}
}

// TestGatewayBadInput: on every dialect, a malformed message after the
// start, a message before it (where the dialect does not start a stream on
// its audio: FreeSWITCH's modules do), and one over the dialect's size
// limit are
// each answered with a close that says why (on a WebSocket: 1007, 1008,
// 1009), and the call ends cleanly: its session lease is freed and the
// stage is ready for the next caller, who is admitted.
func TestGatewayBadInput(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.test(), func(t *testing.T) {
			r := newRig(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			closedWith := func(what string, g *gatewaytest.Gateway, want websocket.StatusCode) {
				t.Helper()
				s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
				if s.Err == nil {
					t.Fatalf("%s: the stream stayed open", what)
				}
				if got := websocket.CloseStatus(s.Err); !d.tcp && got != want {
					t.Fatalf("%s: closed with %v, want %d", what, s.Err, want)
				}
				sessiontest.WaitFor(t, what+": the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
			}
			admitted := func(g *gatewaytest.Gateway) {
				t.Helper()
				sessiontest.WaitFor(t, "admitted", func() bool { return r.stage(session.StageSession).Leased == 1 })
			}

			g := r.gatewayFor(ctx, d, -1, nil)
			admitted(g)
			if err := g.SendRaw(ctx, d.malformed); err != nil {
				t.Fatal(err)
			}
			closedWith("malformed", g, websocket.StatusInvalidFramePayloadData)

			g = r.gatewayFor(ctx, d, -1, nil) // the stage admits the next caller
			admitted(g)
			if !d.tcp { // AudioSocket's 16-bit length cannot say more than its limit
				if err := g.SendRaw(ctx, gateway.Frame{Data: []byte(strings.Repeat(" ", d.caps().MaxMessage+1))}); err != nil {
					t.Fatal(err)
				}
				closedWith("oversize", g, websocket.StatusMessageTooBig)
			} else {
				g.Close()
				sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
			}

			// Media before the start: a raw link that skips the start.
			early := r.rawGateway(ctx, d)
			f, err := d.codec.EncodeEvent(nil, gateway.Event{Kind: gateway.KindMedia, Seq: 1,
				Start: &gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c", Format: d.caps().Formats[0]},
				Audio: make([]byte, d.caps().Formats[0].BytesPer(media.FrameDuration))})
			if err != nil {
				t.Fatal(err)
			}
			if err := early.WriteFrame(ctx, f); err != nil {
				t.Fatal(err)
			}
			if d.caps().ImplicitStart {
				// FreeSWITCH's modules send no start without metadata: the
				// audio starts the stream, which is admitted.
				sessiontest.WaitFor(t, "the implicit start admitted", func() bool { return r.stage(session.StageSession).Leased == 1 })
				_ = early.Close()
				sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
				return
			}
			if _, err := early.ReadFrame(ctx); err == nil {
				t.Fatal("media before the start was answered, not closed")
			} else if got := websocket.CloseStatus(err); !d.tcp && got != websocket.StatusPolicyViolation {
				t.Fatalf("media before the start: closed with %v, want 1008", err)
			}
			if v := r.stage(session.StageSession); v.Leased != 0 || v.Queued != 0 {
				t.Fatalf("a stream that never started holds the stage: %+v", v)
			}
		})
	}
}

// rawGateway is a link to d's endpoint with nothing sent on it.
func (r *rig) rawGateway(ctx context.Context, d dialect) gateway.Link {
	r.T.Helper()
	var l gateway.Link
	if d.tcp {
		l = audiosocket.NewLink(r.dialAudioSocket())
	} else {
		ws, _, err := websocket.Dial(ctx, r.WSURL(d.path), d.dial)
		if err != nil {
			r.T.Fatal(err)
		}
		l = gateway.NewWebSocketLink(ws, 1<<20)
	}
	r.T.Cleanup(func() { _ = l.Close() })
	return l
}

// TestGatewayToken: with a token configured, a stream is served only when
// the gateway presents it, on the upgrade (Basic or Bearer) or in its
// start; any other is closed with 1008 before it asks for admission.
func TestGatewayToken(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	logs.dumpOnFailure(t)
	r := newRig(t, rigGateway(func(c *GatewayConfig) { c.Token = "s3cret" }),
		func(c *session.Config, _ *stub.Settings) { c.Logger = slog.New(logs) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := dialects[0] // plivo: the token in its extra headers
	for _, tc := range []struct {
		name   string
		header string
		params map[string]string
		ok     bool
	}{
		{"none", "", nil, false},
		{"wrong start parameter", "", map[string]string{"token": "guess"}, false},
		{"wrong bearer", "Bearer guess", nil, false},
		{"start parameter", "", map[string]string{"token": "s3cret"}, true},
		{"bearer", "Bearer s3cret", nil, true},
		{"basic", "Basic Z2F0ZXdheTpzM2NyZXQ=", nil, true}, // gateway:s3cret
		{"tenant", "Bearer s3cret", map[string]string{"tenant": "acme"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dd := d
			dd.dial = &websocket.DialOptions{HTTPHeader: map[string][]string{}}
			if tc.header != "" {
				dd.dial.HTTPHeader.Set("Authorization", tc.header)
			}
			g := r.gatewayFor(ctx, dd, -1, tc.params)
			if tc.ok {
				sessiontest.WaitFor(t, "admitted", func() bool { return r.stage(session.StageSession).Leased == 1 })
				started := logs.find(d.name + ": stream started")
				if got := started[len(started)-1]["tenant"]; got != tc.params["tenant"] {
					t.Errorf("the call's tenant is %q, want %q (the start parameter of an authenticated stream)", got, tc.params["tenant"])
				}
				g.Close()
				sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
				return
			}
			s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			if websocket.CloseStatus(s.Err) != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %v, want 1008", s.Err)
			}
			if v := r.stage(session.StageSession); v.Ledger.Admitted != 0 {
				t.Fatalf("a stream without the token was admitted: %+v", v.Ledger)
			}
		})
	}
}

// TestGatewayTenantUntrusted: on an endpoint that requires no token, a
// start naming a tenant is served without one (anyone could name any).
func TestGatewayTenantUntrusted(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	logs.dumpOnFailure(t)
	r := newRig(t, func(c *session.Config, _ *stub.Settings) { c.Logger = slog.New(logs) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := dialects[0]
	g := r.gatewayFor(ctx, d, -1, map[string]string{"tenant": "acme"})
	sessiontest.WaitFor(t, "admitted", func() bool { return r.stage(session.StageSession).Leased == 1 })
	if got := logs.find(d.name + ": stream started")[0]["tenant"]; got != "" {
		t.Errorf("an open endpoint took the tenant %q from the start", got)
	}
	g.Close()
	sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
}

// TestPromptCacheShared: callers asking for one prompt at once share one
// rendering, the same samples (whose encoding per line format the call's
// writer keys by them); another prompt is another entry; a failed
// rendering is not kept.
func TestPromptCacheShared(t *testing.T) {
	t.Parallel()
	c := newPromptCache()
	var renders atomic.Int32
	release := make(chan struct{})
	render := func(context.Context) (backend.Audio, error) {
		renders.Add(1)
		<-release
		return backend.Audio{Rate: 16000, Samples: make([]int16, 3200)}, nil
	}
	key := promptKey("We are busy.")
	var wg sync.WaitGroup
	got := make([]backend.Audio, 8)
	for i := range got {
		wg.Go(func() {
			a, err := c.get(context.Background(), key, render)
			if err != nil {
				t.Error(err)
			}
			got[i] = a
		})
	}
	sessiontest.WaitFor(t, "the first rendering", func() bool { return renders.Load() == 1 })
	close(release)
	wg.Wait()
	if n := renders.Load(); n != 1 {
		t.Fatalf("%d renderings for 8 callers", n)
	}
	for _, a := range got {
		if len(a.Samples) != 3200 || &a.Samples[0] != &got[0].Samples[0] {
			t.Fatalf("callers got %d samples, not the shared 200 ms", len(a.Samples))
		}
	}
	if a, _ := c.get(context.Background(), promptKey("Still busy."), render); len(a.Samples) != 3200 || renders.Load() != 2 {
		t.Fatalf("another prompt: %d samples after %d renderings", len(a.Samples), renders.Load())
	}
	failed := promptKey("fails")
	fail := func(context.Context) (backend.Audio, error) {
		renders.Add(1)
		return backend.Audio{}, backend.ErrMalformed
	}
	for range 2 {
		if _, err := c.get(context.Background(), failed, fail); err == nil {
			t.Fatal("a failed rendering returned no error")
		}
	}
	if n := renders.Load(); n != 4 {
		t.Fatalf("a failed rendering was kept: %d renderings", n)
	}
}

// TestGatewayMidcallHandoff: on the dialects that have a hang-up command
// and carry keys, a caller in conversation whose turn the model stage
// refuses presses 2, holds, and an agent takes the call: the caller hears
// so, and the stream closes (1013 on a WebSocket) without the hang-up
// command, so that the gateway's next step (the dialplan after Dial, the
// next verb) transfers the call; it counts as transferred.
func TestGatewayMidcallHandoff(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		if !d.caps().Hangup || !d.caps().DTMF || d.noParams {
			continue
		}
		t.Run(d.test(), func(t *testing.T) {
			k := newMidcall(t, keypadOptions{window: 10 * time.Second})
			k.logs.dumpOnFailure(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			k.fillModel()
			g := k.gatewayFor(ctx, d, -1, map[string]string{callerParam: "+15550152"})
			sessiontest.WaitFor(t, "the call admitted", func() bool { return len(k.logs.find(d.name+": session")) > 0 })
			rate := g.Start().Format.SampleRate
			if err := g.SendPCM(ctx, append(sessiontest.Speech(t, "hello-8k.wav", rate), silence(600*time.Millisecond, rate)...)); err != nil {
				t.Fatal(err)
			}
			played := func(prefix string) {
				t.Helper()
				s, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return echoedPrefix(s.Echoed, prefix) || s.Err != nil })
				if err != nil || s.Err != nil {
					t.Fatalf("%q not played: %v, stream %v (said %v)", prefix, err, s.Err, k.saidOn(d.name))
				}
			}
			played("menu~")
			k.openModel()
			if err := g.SendDTMF(ctx, "2"); err != nil {
				t.Fatal(err)
			}
			played("handoff-queued~")
			ws := k.agentTakes(ctx, t)
			s, _ := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			if s.HungUp {
				t.Fatal("the call a person took was hung up, not left to the gateway to transfer")
			}
			if !echoedPrefix(s.Echoed, "handoff-completed~") {
				t.Fatalf("closed before the caller heard a person took the call: echoed %v", s.Echoed)
			}
			if got := websocket.CloseStatus(s.Err); !d.tcp && got != websocket.StatusTryAgainLater {
				t.Fatalf("closed with %v, want 1013", s.Err)
			}
			sessiontest.WaitFor(t, "the call counted as transferred", func() bool { return callsEnded(t, k.rig, "transferred") == 1 })
			_ = ws.Close(websocket.StatusNormalClosure, "")
		})
	}
}
