package telephony

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// spokenMidcall is newMidcall with the pocketsphinx recognizer.
func spokenMidcall(t *testing.T) (*midcall, *historyModel) {
	t.Helper()
	if !pocketsphinx.Available() {
		t.Fatal("apt-get install pocketsphinx pocketsphinx-en-us (bash .ci/test does)")
	}
	rec, err := pocketsphinx.New(pocketsphinx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	kp := wireKeypad(t, keypadOptions{window: 20 * time.Second, keyWait: 15 * time.Second}, func(c *session.Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 8, Waiting: 1, MaxAge: 5 * time.Second}
		c.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 10 * time.Second}
		c.Recognize = stages.Limits{Slots: 2, Waiting: 2, MaxAge: 10 * time.Second}
		c.Recognizer = rec
		s.Rate, s.FrameCount = 16000, 10
	})
	k := &midcall{keypad: kp}
	hm := &historyModel{Model: k.modelBackend()}
	k.model = &gatedModel{Model: hm, gate: make(chan struct{})}
	k.setModelBackend(k.model)
	t.Cleanup(k.model.open)
	return k, hm
}

// TestSpokenPersonAfterRefusal: a browser caller on /v1/session (no keypad)
// whose turn the model stage refuses is offered a callback or a person; it
// says "a person please" (espeak-ng, heard by pocketsphinx) and is queued
// for a person, confirmed in words; the model never sees the answer.
func TestSpokenPersonAfterRefusal(t *testing.T) {
	t.Parallel()
	k, hm := spokenMidcall(t)
	k.fillModel()
	c := k.Dial()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	if m := c.Expect("session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "hello"})
	if o := c.Expect("offer"); !slices.Contains(o.Kinds, string(prompt.KindHandoff)) {
		t.Fatalf("offer %+v", o)
	}
	speech := append(say(t, "I would like to speak to a person please.", 16000), make([]int16, 16000)...)
	for len(speech) > 0 {
		n := min(640, len(speech))
		if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
			t.Fatal(err)
		}
		speech = speech[n:]
	}
	tr := c.Expect("transcript")
	t.Logf("heard %q", tr.Text)
	h := c.Expect("handoff")
	if h.Disposition != "queued" || h.Ref == "" {
		t.Fatalf("handoff %+v", h)
	}
	want := prompt.For(prompt.StageHandoff, stages.Queued, nil).Text
	if p := c.Expect("prompt"); p.Text != want {
		t.Fatalf("confirmation %q, want %q", p.Text, want)
	}
	if end := c.Until(sessiontest.IsType("turn_end")); sessiontest.LastOf(end, "turn_end").Disposition != "completed" || sessiontest.LastOf(end, "turn_end").Stage != session.StageRecognize {
		t.Fatalf("turn_end %+v", sessiontest.LastOf(end, "turn_end"))
	}
	if slices.ContainsFunc(hm.seen(), func(tu backend.Turn) bool { return strings.Contains(tu.Text, "person") }) {
		t.Fatalf("the answer reached the model: %+v", hm.seen())
	}
	c.Send(map[string]any{"type": "hangup"})
}

// TestSpokenCallbackAfterRefusal: a phone caller whose turn the model stage
// refuses hears the offer and the menu, and answers it by voice instead of
// the keypad: "call me back", said by espeak-ng and heard by pocketsphinx,
// books a callback to its number (in the store) with the keypad's consent,
// and it hears the booking confirmed. The answer never reaches the model.
func TestSpokenCallbackAfterRefusal(t *testing.T) {
	t.Parallel()
	k, hm := spokenMidcall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	g := k.refused(ctx, t, "+1 555 0161")
	if got := k.saidText("menu~"); got != menuBoth {
		t.Fatalf("menu %q, want %q", got, menuBoth)
	}
	k.openModel()
	if err := g.SendPCM(ctx, say(t, "Please call me back tomorrow morning.", 8000)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendSilence(ctx, 800*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	heard(ctx, t, g, "callback-queued~", k.said)
	if got, want := k.saidText("callback-queued~"), prompt.For(prompt.StageCallback, stages.Queued, nil).Text; got != want {
		t.Fatalf("confirmation %q, want %q", got, want)
	}
	a := k.logs.find("twilio: spoken answer")
	if len(a) != 1 || a[0]["kind"] != string(prompt.KindCallback) {
		t.Fatalf("spoken answers %v", a)
	}
	t.Logf("heard %q", a[0]["caller_transcript"])
	cbs, err := k.svc.ListCallbacks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 1 || cbs[0].Number != "+15550161" || cbs[0].Status != fallback.StatusPending || cbs[0].Turn != "speech-1" {
		t.Fatalf("callbacks %+v", cbs)
	}
	if slices.ContainsFunc(hm.seen(), func(tu backend.Turn) bool { return strings.Contains(tu.Text, "back") }) {
		t.Fatalf("the answer reached the model: %+v", hm.seen())
	}
}
