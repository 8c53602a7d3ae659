package telephony

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// gatedModel holds turns whose text is "hold" until its gate opens (or
// their call ends), so that a test keeps the model stage full for as long
// as it needs and then frees it. shut closes the gate again for turns that
// come later.
type gatedModel struct {
	backend.Model
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gatedModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	if t.Text == "hold" {
		g.mu.Lock()
		gate := g.gate
		g.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Model.Reply(ctx, t, emit)
}

func (g *gatedModel) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
}

func (g *gatedModel) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
		g.gate = make(chan struct{})
	default:
	}
}

// midcall is a server with room for calls, a model stage of one slot and
// one waiting place, a stub recognizer, and package fallback (SQLite
// callbacks in a temporary directory, agents on /v1/agents) as its
// Fallback.
type midcall struct {
	*keypad
	model  *gatedModel
	waiter *sessiontest.Client // the native caller whose turn holds the model stage's waiting place
}

func newMidcall(t *testing.T, o keypadOptions) *midcall {
	t.Helper()
	kp := wireKeypad(t, o, func(c *session.Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 8, Waiting: 1, MaxAge: 5 * time.Second}
		c.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 10 * time.Second}
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
		s.Rate, s.FrameCount = 16000, 10 // 200 ms replies
	})
	k := &midcall{keypad: kp}
	k.model = &gatedModel{Model: k.modelBackend(), gate: make(chan struct{})}
	k.setModelBackend(k.model)
	t.Cleanup(k.model.open) // before the rig closes: cleanups run last first
	return k
}

// fillModel has two native callers take the model stage's slot and its
// waiting place until the gate opens: a third turn is refused (overloaded).
func (k *midcall) fillModel() {
	k.T.Helper()
	a := k.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "hold"})
	a.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == session.StageModel && m.Disposition == "admitted"
	})
	b := k.Admitted()
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "hold"})
	b.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == session.StageModel && m.Disposition == "queued"
	})
	k.waiter = b
}

// openModel opens the model backend's gate and returns once the turn that
// held the stage's waiting place was admitted. Until then the stage is as
// full as before (a1 finishing and b1 taking its slot take a moment), and a
// turn sent at once would be refused.
func (k *midcall) openModel() {
	k.T.Helper()
	k.model.open()
	if b := k.waiter; b != nil {
		k.waiter = nil
		b.Until(func(m sessiontest.Msg) bool {
			return m.Type == "disposition" && m.Stage == session.StageModel && m.Disposition == "admitted"
		})
	}
}

// dialAdmitted connects a gateway whose caller has the number caller ("":
// none) and returns once its call was admitted.
func (k *midcall) dialAdmitted(ctx context.Context, t *testing.T, caller string) *twiliotest.Gateway {
	t.Helper()
	params := map[string]string{"tenant": "acme"}
	if caller != "" {
		params[callerParam] = caller
	}
	g := k.gateway(ctx, twiliotest.Options{Speed: -1, CustomParameters: params})
	sessiontest.WaitFor(t, "the call admitted", func() bool { return len(k.logs.find("twilio: session")) > 0 })
	return g
}

// speak sends one utterance ("hello", then the quiet that ends it): a
// speech turn.
func speak(ctx context.Context, t *testing.T, g *twiliotest.Gateway) {
	t.Helper()
	if err := g.SendPCM(ctx, sessiontest.Speech(t, "hello-8k.wav", 8000)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendSilence(ctx, 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// heard waits until the utterance named prefix was played (its mark echoed).
func heard(ctx context.Context, t *testing.T, g *twiliotest.Gateway, prefix string, said func() []string) twiliotest.Snapshot {
	t.Helper()
	s, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return echoed(s, prefix) || s.Err != nil })
	if err != nil || s.Err != nil {
		t.Fatalf("%q not played: %v, stream %v (echoed %v, said %v)", prefix, err, s.Err, s.Echoed, said())
	}
	return s
}

// refused has the gateway's caller speak while the model stage is full and
// waits until the keypad menu that follows was played.
func (k *midcall) refused(ctx context.Context, t *testing.T, caller string) *twiliotest.Gateway {
	t.Helper()
	k.fillModel()
	g := k.dialAdmitted(ctx, t, caller)
	speak(ctx, t, g)
	heard(ctx, t, g, "menu~", k.said)
	return g
}

// prompts returns the texts of the prompts the stream was given, in order.
func (k *midcall) prompts(stage string) []string {
	var out []string
	for _, r := range k.logs.find("twilio: prompt") {
		if r["stage"] == stage {
			out = append(out, r["text"].(string))
		}
	}
	return out
}

var bothKinds = []prompt.Kind{prompt.KindCallback, prompt.KindHandoff}

// TestTwilioMidcallCallback: a caller in conversation whose turn the model
// stage refuses hears the prompt offering a callback or a person and then
// the keypad menu; 1 books a callback to its number (in the store) and it
// hears that its callback is booked. The stream stays open: its next
// utterance is admitted and answered, and a key with no menu open does
// nothing.
func TestTwilioMidcallCallback(t *testing.T) {
	t.Parallel()
	k := newMidcall(t, keypadOptions{window: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.refused(ctx, t, "+1 555 0151")
	want := prompt.For(session.StageModel, stages.Overloaded, bothKinds).Text
	if p := k.prompts(session.StageModel); len(p) != 1 || p[0] != want {
		t.Fatalf("prompts %q, want %q", p, want)
	}
	if got := k.saidText("menu~"); got != menuBoth {
		t.Fatalf("menu %q, want %q", got, menuBoth)
	}
	k.openModel() // the model stage has room again
	if err := g.SendDTMF(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	heard(ctx, t, g, "callback-queued~", k.said)
	if got, want := k.saidText("callback-queued~"), prompt.For(prompt.StageCallback, stages.Queued, nil).Text; got != want {
		t.Fatalf("confirmation %q, want %q", got, want)
	}
	cbs, err := k.svc.ListCallbacks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 1 || cbs[0].Number != "+15550151" || cbs[0].Status != fallback.StatusPending || cbs[0].Turn != "speech-1" {
		t.Fatalf("callbacks %+v", cbs)
	}

	// The conversation goes on.
	speak(ctx, t, g)
	heard(ctx, t, g, "speech-2~", k.said)
	if err := g.SendDTMF(ctx, "1"); err != nil { // no menu is open
		t.Fatal(err)
	}
	speak(ctx, t, g)
	heard(ctx, t, g, "speech-3~", k.said)
	if a := k.logs.find("twilio: keypad answer"); len(a) != 1 {
		t.Fatalf("answers %v", a)
	}
	if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 1 {
		t.Fatalf("callbacks %+v", cbs)
	}
	if err := g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
	if websocket.CloseStatus(s.Err) != websocket.StatusNormalClosure {
		t.Fatalf("closed with %v after stop", s.Err)
	}
}

// TestTwilioMidcallCallbackFails: when the store fails the booking, the
// caller hears that nothing was scheduled and the conversation goes on; a
// later refusal offers the menu again.
func TestTwilioMidcallCallbackFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := fallback.OpenSQLite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k := newMidcall(t, keypadOptions{window: 10 * time.Second, opts: []fallback.Option{fallback.WithStore(refusingStore{db})}})
	g := k.refused(ctx, t, "+15550157")
	// The refusal prompt plays to its end first: an answer while it plays
	// would cut it (its premise, the offer, is answered).
	heard(ctx, t, g, "speech-1~", k.said)
	k.openModel()
	if err := g.SendDTMF(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, "the failure prompt", func() bool { return len(k.prompts(prompt.StageCallback)) > 0 })
	if p := k.prompts(prompt.StageCallback); p[0] != prompt.Failed(prompt.StageCallback, nil).Text {
		t.Fatalf("prompts %q", p)
	}
	// Its audio is the Fallback's, as an utterance of the refused turn.
	if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool {
		n := 0
		for _, m := range s.Echoed {
			if strings.HasPrefix(m, "speech-1~") {
				n++
			}
		}
		return n == 2 || s.Err != nil
	}); err != nil || g.Snapshot().Err != nil {
		t.Fatalf("failure prompt not played: %v %v", err, g.Snapshot())
	}
	if k.saidText("callback-") != "" {
		t.Fatalf("said %v", k.said())
	}

	k.model.shut()
	k.fillModel()
	speak(ctx, t, g)
	if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool {
		return len(k.logs.find("twilio: keypad menu")) == 2 || s.Err != nil
	}); err != nil || g.Snapshot().Err != nil {
		t.Fatalf("no second menu: %v, said %v", err, k.said())
	}
	if cbs, _ := db.List(ctx, 0); len(cbs) != 0 {
		t.Fatalf("callbacks %+v", cbs)
	}
}

// TestTwilioMidcallHandoff: 2 puts the caller in conversation on hold for
// a person (while it holds, what it says is still answered); an agent on
// /v1/agents claims and acknowledges the handoff; the caller hears that a
// person has taken the call and the stream ends with 1013, so that the
// TwiML after <Connect> transfers it.
func TestTwilioMidcallHandoff(t *testing.T) {
	t.Parallel()
	k := newMidcall(t, keypadOptions{window: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.refused(ctx, t, "+15550152")
	k.openModel()
	if err := g.SendDTMF(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	heard(ctx, t, g, "handoff-queued~", k.said)
	// The hold does not stop the conversation: the caller is still answered.
	speak(ctx, t, g)
	heard(ctx, t, g, "speech-2~", k.said)

	ws := k.agentTakes(ctx, t)

	closedAfter(ctx, t, g, "handoff-completed~")
	if got, want := k.saidText("handoff-completed~"), prompt.For(prompt.StageHandoff, stages.Completed, nil).Text; got != want {
		t.Fatalf("outcome %q, want %q", got, want)
	}
	if out := k.logs.find("twilio: keypad outcome"); len(out) != 2 || out[1]["agent"] != "a1" {
		t.Fatalf("outcomes %v", out)
	}
	if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
		t.Fatalf("a handoff booked callbacks: %+v", cbs)
	}
	// Operators see the call end as a transfer, not as a lost caller.
	transferred := func() float64 { return callsEnded(t, k.rig, "transferred") }
	sessiontest.WaitFor(t, "the call counted as transferred", func() bool { return transferred() == 1 })
	_ = ws.Close(websocket.StatusNormalClosure, "")
}

// agentTakes has agent a1 on /v1/agents claim and acknowledge the handoff
// waiting; it returns the agent's connection, which the caller closes.
func (r *rig) agentTakes(ctx context.Context, t *testing.T) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, r.WSURL("/v1/agents?agent=a1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	a := &agentConn{t: t, ws: ws}
	w := a.until(ctx, func(m agentMsg) bool { return m.Type == "waiting" && len(m.Handoffs) > 0 })
	ticket := w.Handoffs[0].Ticket
	a.send(ctx, map[string]string{"type": "claim", "ticket": ticket})
	a.until(ctx, func(m agentMsg) bool { return m.Type == "claimed" && m.Ticket == ticket })
	a.send(ctx, map[string]string{"type": "ack", "ticket": ticket})
	if m := a.until(ctx, func(m agentMsg) bool { return m.Type == "resolved" }); m.Disposition != "completed" {
		t.Fatalf("resolved %+v", m)
	}
	return ws
}

// TestTwilioMidcallHoldEnds: with nobody to take the call, a mid-call hold
// ends with the offer window: the handoff is withdrawn, the caller hears
// that the search stopped, and the conversation goes on.
func TestTwilioMidcallHoldEnds(t *testing.T) {
	t.Parallel()
	k := newMidcall(t, keypadOptions{window: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.refused(ctx, t, "+15550153")
	k.openModel()
	if err := g.SendDTMF(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	heard(ctx, t, g, "handoff-queued~", k.said)
	heard(ctx, t, g, "handoff-expired~", k.said)
	sessiontest.WaitFor(t, "the handoff withdrawn", func() bool { return k.svc.Snapshot(prompt.KindHandoff).Queued == 0 })
	speak(ctx, t, g)
	heard(ctx, t, g, "speech-2~", k.said)
	if got := k.said(); len(got) != 3 {
		t.Fatalf("said %v, want the menu, the hold and its end", got)
	}
}

// TestTwilioMidcallNoKey: a caller who presses nothing, or a key not on
// the menu, is not asked again; nothing is booked or queued, and its next
// utterance is answered as usual.
func TestTwilioMidcallNoKey(t *testing.T) {
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
			k := newMidcall(t, keypadOptions{window: 20 * time.Second, keyWait: 300 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			g := k.refused(ctx, t, "+15550154")
			if tc.key != "" {
				if err := g.SendDTMF(ctx, tc.key); err != nil {
					t.Fatal(err)
				}
			}
			sessiontest.WaitFor(t, "the menu declined", func() bool { return len(k.logs.find("twilio: keypad menu declined")) > 0 })
			if d := k.logs.find("twilio: keypad menu declined"); len(d) != 1 || d[0]["why"] != tc.why {
				t.Fatalf("declined %v", d)
			}
			k.openModel()
			speak(ctx, t, g)
			heard(ctx, t, g, "speech-2~", k.said)
			if len(k.logs.find("twilio: keypad answer")) != 0 {
				t.Fatal("an answer was taken")
			}
			if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 0 {
				t.Fatalf("callbacks %+v", cbs)
			}
			if v := k.svc.Snapshot(prompt.KindHandoff); v.Queued != 0 || v.Ledger.Offered != 0 {
				t.Fatalf("handoffs %+v", v)
			}
		})
	}
}

// TestTwilioMidcallSpeechDuringMenu: the menu stays open for its key wait
// while the conversation goes on. A turn refused while it is open gets a
// prompt with no offer (one menu at a time, no second question); a turn
// admitted meanwhile is answered; a key then still answers the menu.
func TestTwilioMidcallSpeechDuringMenu(t *testing.T) {
	t.Parallel()
	k := newMidcall(t, keypadOptions{window: 20 * time.Second, keyWait: 8 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := k.refused(ctx, t, "+15550155")
	speak(ctx, t, g) // refused again: the stage is still full
	heard(ctx, t, g, "speech-2~", k.said)
	want := []string{
		prompt.For(session.StageModel, stages.Overloaded, bothKinds).Text,
		prompt.For(session.StageModel, stages.Overloaded, nil).Text,
	}
	if p := k.prompts(session.StageModel); !slices.Equal(p, want) {
		t.Fatalf("prompts %q, want %q", p, want)
	}
	k.openModel()
	speak(ctx, t, g)
	heard(ctx, t, g, "speech-3~", k.said)
	if err := g.SendDTMF(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	s := heard(ctx, t, g, "callback-queued~", k.said)
	if len(k.logs.find("twilio: keypad menu declined")) != 0 || len(k.logs.find("twilio: keypad menu")) != 1 {
		t.Fatalf("menus %v", k.said())
	}
	for _, o := range s.Log {
		if o.Event == "clear" {
			t.Fatal("a key cleared the conversation's audio")
		}
	}
	if cbs, _ := k.svc.ListCallbacks(ctx, 0); len(cbs) != 1 || cbs[0].Turn != "speech-1" {
		t.Fatalf("callbacks %+v", cbs)
	}
}

// TestTwilioMidcallNoNumber: a caller without a number is offered only a
// person, and the menu names only 2; when a callback is all there is, the
// prompt asks nothing (no offer sentence) and no menu follows.
func TestTwilioMidcallNoNumber(t *testing.T) {
	t.Parallel()
	t.Run("handoff left", func(t *testing.T) {
		k := newMidcall(t, keypadOptions{window: 10 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		k.refused(ctx, t, "")
		want := prompt.For(session.StageModel, stages.Overloaded, []prompt.Kind{prompt.KindHandoff}).Text
		if p := k.prompts(session.StageModel); len(p) != 1 || p[0] != want {
			t.Fatalf("prompts %q, want %q", p, want)
		}
		if got := k.saidText("menu~"); got != menuHandoff {
			t.Fatalf("menu %q, want %q", got, menuHandoff)
		}
	})
	t.Run("nothing to offer", func(t *testing.T) {
		k := newMidcall(t, keypadOptions{window: 10 * time.Second, config: func(c *fallback.Config) { c.HandoffQueue = 1 }})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		h, d, err := k.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "other", Turn: "t1"})
		if err != nil || d != stages.Queued {
			t.Fatalf("handoff %v %v", d, err)
		}
		defer h.Cancel()
		k.fillModel()
		g := k.dialAdmitted(ctx, t, "")
		speak(ctx, t, g)
		heard(ctx, t, g, "speech-1~", k.said) // the prompt's audio
		want := prompt.For(session.StageModel, stages.Overloaded, nil).Text
		if p := k.prompts(session.StageModel); len(p) != 1 || p[0] != want || strings.HasSuffix(p[0], "?") {
			t.Fatalf("prompts %q, want %q", p, want)
		}
		k.openModel()
		speak(ctx, t, g)
		heard(ctx, t, g, "speech-2~", k.said)
		if len(k.said()) != 0 {
			t.Fatalf("said %v", k.said())
		}
	})
}

// TestOffersMidcallNative: the native path is unchanged: a caller on
// /v1/session whose turn the model stage refuses gets the prompt that
// offers bothKinds fallbacks and the `offer`, books a callback with a
// `callback` message, and its conversation goes on.
func TestOffersMidcallNative(t *testing.T) {
	t.Parallel()
	k := newMidcall(t, keypadOptions{window: 10 * time.Second})
	k.fillModel()
	c := k.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "x"})
	all := c.Until(sessiontest.IsType("offer"))
	p := sessiontest.LastOf(all, "prompt")
	if want := prompt.For(session.StageModel, stages.Overloaded, bothKinds).Text; p.Stage != session.StageModel || p.Reason != "overloaded" || p.Text != want {
		t.Fatalf("prompt %+v, want %q", p, want)
	}
	if o := sessiontest.LastOf(all, "offer"); !slices.Equal(o.Kinds, []string{"callback", "handoff"}) {
		t.Fatalf("offer %+v", o)
	}
	c.Send(map[string]any{"type": "callback", "consent": true, "number": "+15550156"})
	if m := c.Expect("callback"); m.Disposition != "queued" || m.Ref == "" {
		t.Fatalf("callback %+v", m)
	}
	k.openModel()
	c.Send(map[string]any{"type": "turn", "id": "c2", "text": "x"})
	if end := sessiontest.LastOf(c.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "c2" }), "turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
}
