package telephony

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/offer"
	"github.com/frontdoorhq/frontdoor/stages"
)

// keypad is a server whose session stage has one slot and turns a waiting
// caller away after 200 ms, with package fallback (SQLite callbacks in a
// temporary directory, the agents' WebSocket on /v1/agents) as its
// Fallback, and one native caller holding the slot.
type keypad struct {
	*rig
	svc    *fallback.Service
	offers *offer.Offers
	logs   *logRecords
	// keyWait is the endpoints' KeyWait (0: DefaultKeyWait): a SIP server
	// a test starts itself is given it too.
	keyWait time.Duration
}

type keypadOptions struct {
	window  time.Duration // Offers.OfferWindow
	keyWait time.Duration // 0: the default
	config  func(*fallback.Config)
	opts    []fallback.Option
	synth   backend.Synthesizer // renders the prompts (nil: the 200 ms stub)
}

func newKeypad(t *testing.T, o keypadOptions) *keypad {
	t.Helper()
	k := wireKeypad(t, o, func(c *session.Config, _ *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 200 * time.Millisecond}
	})
	holder := k.Admitted()
	t.Cleanup(holder.HangUp)
	return k
}

// wireKeypad starts a rig with package fallback as its Fallback (SQLite
// callbacks in a temporary directory, the agents' WebSocket on
// /v1/agents, prompts of 200 ms) and the stage limits set by limits.
func wireKeypad(t *testing.T, o keypadOptions, limits func(*session.Config, *stub.Settings)) *keypad {
	t.Helper()
	k := &keypad{logs: &logRecords{}, keyWait: o.keyWait}
	wire := func(c *session.Config, s *stub.Settings) {
		fc := fallback.DefaultConfig()
		fc.DataDir = t.TempDir()
		if o.config != nil {
			o.config(&fc)
		}
		// Prompts of 200 ms: short, but long enough to be paced and marked.
		var synth backend.Synthesizer = stub.NewSynthesizer(stub.Settings{FrameCount: 10, Rate: 16000})
		if o.synth != nil {
			synth = o.synth
		}
		svc, err := fallback.New(context.Background(), fc, offer.Synthesizer(synth), nil, o.opts...)
		if err != nil {
			t.Fatal(err)
		}
		k.svc = svc
		k.offers = offer.New(svc)
		k.offers.OfferWindow = o.window
		c.Fallback = k.offers
		c.Logger = slog.New(k.logs)
		limits(c, s)
	}
	after := func() {
		k.offers.Wait()
		k.svc.Close()
	}
	agents := sessiontest.Routes(func() map[string]http.Handler {
		return map[string]http.Handler{"GET /v1/agents": k.svc.AgentHandler(nil)}
	})
	keyWait := []any{rigTwilio(func(c *Config) { c.KeyWait = o.keyWait }),
		rigGateway(func(c *GatewayConfig) { c.KeyWait = o.keyWait })}
	k.rig = newRig(t, append(keyWait, wire, sessiontest.After(after), agents)...)
	return k
}

// dialRefused connects a gateway whose call waits, expires and is offered
// the fallbacks; it returns once the menu has played (its mark came back).
func (k *keypad) dialRefused(ctx context.Context, t *testing.T, caller string) *twiliotest.Gateway {
	t.Helper()
	params := map[string]string{"tenant": "acme"}
	if caller != "" {
		params[callerParam] = caller
	}
	g := k.gateway(ctx, twiliotest.Options{Speed: -1, CustomParameters: params})
	if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return echoed(s, "menu~") }); err != nil {
		t.Fatalf("menu not played: %v (said %v)", err, k.said())
	}
	return g
}

// said lists the utterances the keypad code spoke, in order.
func (k *keypad) said() []string { return k.saidOn("twilio") }

// saidOn lists the utterances the keypad code spoke on transport, in
// order.
func (k *keypad) saidOn(transport string) []string {
	var out []string
	for _, r := range k.logs.find(transport + ": say") {
		out = append(out, r["utterance"].(string))
	}
	return out
}

// saidText returns the text of the first utterance named prefix.
func (k *keypad) saidText(prefix string) string { return k.saidTextOn("twilio", prefix) }

// saidTextOn returns the text of the first utterance named prefix on
// transport.
func (k *keypad) saidTextOn(transport, prefix string) string {
	for _, r := range k.logs.find(transport + ": say") {
		if strings.HasPrefix(r["utterance"].(string), prefix) {
			return r["text"].(string)
		}
	}
	return ""
}

func echoed(s twiliotest.Snapshot, prefix string) bool { return echoedPrefix(s.Echoed, prefix) }

// closed waits for the connection to end and checks it closed with 1013
// after the utterance named prefix was played (its final mark echoed).
func closedAfter(ctx context.Context, t *testing.T, g *twiliotest.Gateway, prefix string) twiliotest.Snapshot {
	t.Helper()
	s, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
	if err != nil && s.Err == nil {
		t.Fatal(err)
	}
	if websocket.CloseStatus(s.Err) != websocket.StatusTryAgainLater {
		t.Fatalf("closed with %v, want 1013", s.Err)
	}
	if prefix != "" && !echoed(s, prefix) {
		t.Fatalf("closed before %q was played: echoed %v", prefix, s.Echoed)
	}
	if last := s.Log[len(s.Log)-1]; last.Event != twilio.EventMark {
		t.Fatalf("the last utterance does not end with a mark: %+v", last)
	}
	return s
}

// TestTwilioKeypadCallback: a refused caller with a number hears the menu,
// presses 1, and a callback to its number is durably booked (it is in the
// store) before it hears that its callback is booked; then 1013.
func TestTwilioKeypadCallback(t *testing.T) {
	t.Parallel()
	k := newKeypad(t, keypadOptions{window: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.dialRefused(ctx, t, "+1 555 0142")
	if got := k.saidText("menu~"); got != menuBoth {
		t.Fatalf("menu %q, want %q", got, menuBoth)
	}
	before := g.Snapshot().Received
	if err := g.SendDTMF(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	s := closedAfter(ctx, t, g, "callback-queued~")
	if s.Received <= before {
		t.Fatalf("no audio after the key: %v then %v", before, s.Received)
	}
	want := prompt.For(prompt.StageCallback, stages.Queued, nil).Text
	if got := k.saidText("callback-queued~"); got != want {
		t.Fatalf("confirmation %q, want %q", got, want)
	}
	cbs, err := k.svc.ListCallbacks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 1 || cbs[0].Number != "+15550142" || cbs[0].Status != fallback.StatusPending || cbs[0].Turn != session.StageSession || cbs[0].Call == "" {
		t.Fatalf("callbacks %+v", cbs)
	}
	if out := k.logs.find("twilio: keypad outcome"); len(out) != 1 || out[0]["ticket"] != cbs[0].Ref {
		t.Fatalf("outcome %v, ticket %s", out, cbs[0].Ref)
	}
}

// refusingStore is a callback store whose writes fail.
type refusingStore struct{ fallback.CallbackStore }

func (refusingStore) Accept(context.Context, fallback.Callback) (fallback.Callback, bool, error) {
	return fallback.Callback{}, false, errors.New("disk full")
}

// TestTwilioKeypadNotEstablished: a key whose fallback cannot be had after
// all (the callback list or the handoff queue filled up since the offer, or
// the store fails) establishes nothing, and the caller hears the matching
// prompt, never that a callback is booked or a person is sought; then 1013.
func TestTwilioKeypadNotEstablished(t *testing.T) {
	t.Parallel()
	t.Run("list full", func(t *testing.T) {
		k := newKeypad(t, keypadOptions{window: 10 * time.Second, config: func(c *fallback.Config) { c.CallbackQueue = 1 }})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		g := k.dialRefused(ctx, t, "+15550146")
		// Another caller takes the last place between the offer and the key.
		if r, err := k.svc.RequestCallback(ctx, fallback.CallbackRequest{Call: "other", Turn: "t1", Number: "+15550147", Consent: true}); err != nil || r.Disposition != stages.Queued {
			t.Fatalf("other callback %+v %v", r, err)
		}
		if err := g.SendDTMF(ctx, "1"); err != nil {
			t.Fatal(err)
		}
		closedAfter(ctx, t, g, "callback-overloaded~")
		want := prompt.For(prompt.StageCallback, stages.Overloaded, nil).Text
		if got := k.saidText("callback-overloaded~"); got != want {
			t.Fatalf("outcome %q, want %q", got, want)
		}
		if k.saidText("callback-queued~") != "" {
			t.Fatal("said booked")
		}
		if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 1 || cbs[0].Call != "other" {
			t.Fatalf("callbacks %+v", cbs)
		}
	})
	t.Run("handoff queue full", func(t *testing.T) {
		k := newKeypad(t, keypadOptions{window: 10 * time.Second, config: func(c *fallback.Config) { c.HandoffQueue = 1 }})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		g := k.dialRefused(ctx, t, "+15550149")
		h, d, err := k.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "other", Turn: "t1"})
		if err != nil || d != stages.Queued {
			t.Fatalf("other handoff %v %v", d, err)
		}
		defer h.Cancel()
		if err := g.SendDTMF(ctx, "2"); err != nil {
			t.Fatal(err)
		}
		closedAfter(ctx, t, g, "handoff-overloaded~")
		want := prompt.For(prompt.StageHandoff, stages.Overloaded, nil).Text
		if got := k.saidText("handoff-overloaded~"); got != want {
			t.Fatalf("outcome %q, want %q", got, want)
		}
		if k.saidText("handoff-queued~") != "" {
			t.Fatal("said a person is being looked for")
		}
	})
	t.Run("store fails", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, err := fallback.OpenSQLite(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		k := newKeypad(t, keypadOptions{window: 10 * time.Second, opts: []fallback.Option{fallback.WithStore(refusingStore{db})}})
		g := k.dialRefused(ctx, t, "+15550148")
		prompts := func(s twiliotest.Snapshot) int {
			n := 0
			for _, m := range s.Echoed {
				if strings.HasPrefix(m, session.StageSession+"~") {
					n++
				}
			}
			return n
		}
		before := prompts(g.Snapshot())
		if err := g.SendDTMF(ctx, "1"); err != nil {
			t.Fatal(err)
		}
		s := closedAfter(ctx, t, g, "")
		if prompts(s) != before+1 {
			t.Fatalf("the failure prompt was not played: echoed %v", s.Echoed)
		}
		p := k.logs.find("twilio: prompt")
		if last := p[len(p)-1]; last["stage"] != prompt.StageCallback || last["reason"] != prompt.ReasonFailed {
			t.Fatalf("prompts %v", p)
		}
		if k.saidText("callback-") != "" {
			t.Fatalf("said %v", k.said())
		}
		if cbs, _ := db.List(ctx, 0); len(cbs) != 0 {
			t.Fatalf("callbacks %+v", cbs)
		}
	})
}

// agentConn is a human agent on /v1/agents.
type agentConn struct {
	t  *testing.T
	ws *websocket.Conn
}

type agentMsg struct {
	Type        string `json:"type"`
	Ticket      string `json:"ticket"`
	Disposition string `json:"disposition"`
	Handoffs    []struct {
		Ticket string `json:"ticket"`
		Call   string `json:"call"`
	} `json:"handoffs"`
}

func (a *agentConn) send(ctx context.Context, v any) {
	a.t.Helper()
	b, _ := json.Marshal(v)
	if err := a.ws.Write(ctx, websocket.MessageText, b); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agentConn) until(ctx context.Context, ok func(agentMsg) bool) agentMsg {
	a.t.Helper()
	for {
		_, b, err := a.ws.Read(ctx)
		if err != nil {
			a.t.Fatalf("agent read: %v", err)
		}
		var m agentMsg
		if err := json.Unmarshal(b, &m); err != nil {
			a.t.Fatalf("agent message %s: %v", b, err)
		}
		if ok(m) {
			return m
		}
	}
}

// TestTwilioKeypadHandoff: the caller presses 2, hears that a person is
// being looked for and holds; an agent on /v1/agents claims and
// acknowledges the handoff; the caller hears that a person has taken the
// call, and the stream ends with 1013 as a native refused caller's does
// (the gateway goes on to the TwiML after <Connect>).
func TestTwilioKeypadHandoff(t *testing.T) {
	t.Parallel()
	k := newKeypad(t, keypadOptions{window: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.dialRefused(ctx, t, "+15550143")
	if err := g.SendDTMF(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return echoed(s, "handoff-queued~") }); err != nil {
		t.Fatalf("hold prompt not played: %v (said %v)", err, k.said())
	}
	if s := g.Snapshot(); s.Err != nil {
		t.Fatalf("the caller was dropped while holding: %v", s.Err)
	}

	ws := k.agentTakes(ctx, t)

	closedAfter(ctx, t, g, "handoff-completed~")
	want := prompt.For(prompt.StageHandoff, stages.Completed, nil).Text
	if got := k.saidText("handoff-completed~"); got != want {
		t.Fatalf("outcome %q, want %q", got, want)
	}
	if out := k.logs.find("twilio: keypad outcome"); len(out) != 2 || out[1]["agent"] != "a1" {
		t.Fatalf("outcomes %v", out)
	}
	if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
		t.Fatalf("a handoff booked callbacks: %+v", cbs)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
}

// TestTwilioKeypadHandoffNoAgent: with nobody to take the call, the hold is
// bounded: once the offer window ends, the caller hears that the search
// stopped, the handoff is withdrawn, and the stream ends with 1013.
func TestTwilioKeypadHandoffNoAgent(t *testing.T) {
	t.Parallel()
	k := newKeypad(t, keypadOptions{window: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.dialRefused(ctx, t, "+15550144")
	if err := g.SendDTMF(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	closedAfter(ctx, t, g, "handoff-expired~")
	if !slices.ContainsFunc(k.said(), func(u string) bool { return strings.HasPrefix(u, "handoff-queued~") }) {
		t.Fatalf("said %v", k.said())
	}
	sessiontest.WaitFor(t, "the handoff withdrawn", func() bool { return k.svc.Snapshot(prompt.KindHandoff).Queued == 0 })
}

// TestTwilioKeypadNoKey: a caller who presses nothing is closed as before,
// with 1013 after the menu, once the key wait ran out (well before the offer
// window); a key that is not on the menu does the same at once. Nothing is
// booked or queued.
func TestTwilioKeypadNoKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  string
		why  string
	}{
		{"no key", "", "no key"},
		{"another key", "9", "other key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The offer window is an hour: that the call closes at all
			// (within the test's context) shows it was the key wait.
			k := newKeypad(t, keypadOptions{window: time.Hour, keyWait: 300 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			g := k.dialRefused(ctx, t, "+15550145")
			if tc.key != "" {
				if err := g.SendDTMF(ctx, tc.key); err != nil {
					t.Fatal(err)
				}
			}
			closedAfter(ctx, t, g, "menu~")
			if d := k.logs.find("twilio: keypad menu declined"); len(d) != 1 || d[0]["why"] != tc.why {
				t.Fatalf("declined %v", d)
			}
			if len(k.logs.find("twilio: keypad answer")) != 0 {
				t.Fatal("an answer was taken")
			}
			if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
				t.Fatalf("callbacks %+v", cbs)
			}
			if v := k.svc.Snapshot(prompt.KindHandoff); v.Queued != 0 {
				t.Fatalf("handoffs %+v", v)
			}
		})
	}
}

// TestTwilioKeypadNoNumber: a caller without a valid number is not offered
// a callback: the prompt offers only a person, the menu names only 2, and
// pressing 1 books nothing and ends the call politely. When a callback is
// all there is, the prompt offers nothing (no question is asked), no menu
// is said and the call closes after the prompt without waiting for the
// offer window.
func TestTwilioKeypadNoNumber(t *testing.T) {
	t.Parallel()
	t.Run("handoff left", func(t *testing.T) {
		k := newKeypad(t, keypadOptions{window: 20 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		g := k.dialRefused(ctx, t, "0100") // not E.164
		if got := k.saidText("menu~"); got != menuHandoff {
			t.Fatalf("menu %q, want %q", got, menuHandoff)
		}
		want := prompt.For(session.StageSession, stages.Expired, []prompt.Kind{prompt.KindHandoff}).Text
		if p := k.logs.find("twilio: prompt"); len(p) != 2 || p[1]["text"] != want {
			t.Fatalf("prompts %v, want the last %q", p, want)
		}
		if err := g.SendDTMF(ctx, "1"); err != nil {
			t.Fatal(err)
		}
		closedAfter(ctx, t, g, "menu~")
		if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
			t.Fatalf("callbacks %+v", cbs)
		}
		if v := k.svc.Snapshot(prompt.KindHandoff); v.Queued != 0 || v.Ledger.Offered != 0 {
			t.Fatalf("handoffs %+v", v)
		}
		if d := k.logs.find("twilio: keypad menu declined"); len(d) != 1 || d[0]["why"] != "other key" {
			t.Fatalf("declined %v", d)
		}
	})
	t.Run("callback only", func(t *testing.T) {
		// The offer window is an hour: that the call closes at all
		// (within the test's context) shows it did not wait for it.
		k := newKeypad(t, keypadOptions{window: time.Hour, config: func(c *fallback.Config) { c.HandoffQueue = 1 }})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		// Another caller fills the handoff queue: only a callback is offered.
		h, d, err := k.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "other", Turn: "t1"})
		if err != nil || d != stages.Queued {
			t.Fatalf("handoff %v %v", d, err)
		}
		defer h.Cancel()
		g := k.gateway(ctx, twiliotest.Options{Speed: -1})
		s := closedAfter(ctx, t, g, "")
		if s.Received == 0 || len(k.said()) != 0 {
			t.Fatalf("heard %v, said %v", s.Received, k.said())
		}
		want := prompt.For(session.StageSession, stages.Expired, nil).Text
		if p := k.logs.find("twilio: prompt"); len(p) != 2 || p[1]["text"] != want {
			t.Fatalf("prompts %v, want the last %q", p, want)
		}
		if m := k.logs.find("twilio: keypad menu"); len(m) != 0 {
			t.Fatalf("a menu was offered: %v", m)
		}
		if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
			t.Fatalf("callbacks %+v", cbs)
		}
	})
}
