package session

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestSpokenCallbackAfterRefusal: a phone caller whose turn the model stage
// refuses hears the offer and the menu, and answers it by voice instead of
// the keypad: "call me back", said by espeak-ng and heard by pocketsphinx,
// books a callback to its number (in the store) with the keypad's consent,
// and it hears the booking confirmed. The answer never reaches the model.
func TestSpokenCallbackAfterRefusal(t *testing.T) {
	if !pocketsphinx.Available() {
		t.Fatal("apt-get install pocketsphinx pocketsphinx-en-us (bash .ci/test does)")
	}
	rec, err := pocketsphinx.New(pocketsphinx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	kp := wireKeypad(t, keypadOptions{window: 20 * time.Second, keyWait: 15 * time.Second}, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 8, Waiting: 1, MaxAge: 5 * time.Second}
		c.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 10 * time.Second}
		c.Recognize = stages.Limits{Slots: 2, Waiting: 2, MaxAge: 10 * time.Second}
		c.Recognizer = rec
		s.Rate, s.FrameCount = 16000, 10
	})
	k := &midcall{keypad: kp}
	hm := &historyModel{Model: k.srv.cfg.ModelBackend}
	k.model = &gatedModel{Model: hm, gate: make(chan struct{})}
	k.srv.cfg.ModelBackend = k.model
	t.Cleanup(k.model.open)

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
	if got, want := k.saidText("callback-queued~"), fallback.PromptFor(fallback.StageCallback, stages.Queued, nil).Text; got != want {
		t.Fatalf("confirmation %q, want %q", got, want)
	}
	a := k.logs.find("twilio: spoken answer")
	if len(a) != 1 || a[0]["kind"] != string(fallback.KindCallback) {
		t.Fatalf("spoken answers %v", a)
	}
	t.Logf("heard %q", a[0]["transcript"])
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
