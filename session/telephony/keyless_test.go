package telephony

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/gateway/freeswitch"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// TestKeylessRefusal: on every dialect whose socket cannot carry keys
// (FreeSWITCH's modules), a refused caller with a number and offers on is
// never asked to press a key: it hears the refusal prompt with no offer
// and no menu, and its call ends at once after it (hung up where the
// dialect can), not after a key wait it could never answer. The menu
// would wait keyWait, far longer than the test's deadline.
func TestKeylessRefusal(t *testing.T) {
	t.Parallel()
	n := 0
	for _, d := range dialects {
		if d.caps().DTMF {
			continue
		}
		n++
		t.Run(d.test(), func(t *testing.T) {
			k := newKeypad(t, keypadOptions{window: time.Minute, keyWait: time.Minute})
			k.logs.dumpOnFailure(t)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			g := k.gatewayFor(ctx, d, -1, map[string]string{callerParam: "+15550142"})
			s, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return s.Err != nil })
			if err != nil {
				t.Fatalf("the refused call did not end: %v (said %v)", err, k.saidOn(d.name))
			}
			if d.caps().Hangup && !s.HungUp {
				t.Fatalf("not hung up: %v", s.Err)
			}
			if s.Received < 200*time.Millisecond { // prompts of 200 ms (the last frames may still be in flight at the close)
				t.Fatalf("heard %v of prompt", s.Received)
			}
			for _, u := range k.saidOn(d.name) {
				if strings.HasPrefix(u, "menu~") {
					t.Fatalf("a keyless caller was read a menu: %q", k.saidTextOn(d.name, "menu~"))
				}
			}
			if p := k.logs.find(d.name + ": prompt"); len(p) == 0 {
				t.Fatal("no refusal prompt")
			}
		})
	}
	if n == 0 {
		t.Fatal("no dialect without DTMF to test")
	}
}

// TestSpokenMenuSentences: on a line without keys the menu names words,
// not keys, and the words it names are the ones the spoken answer takes
// (fallback.SpokenAnswer); on a line with keys it names keys.
func TestSpokenMenuSentences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spoken, callback, handoff bool
		want                      string
		answers                   map[string]prompt.Kind
	}{
		{false, true, true, menuBoth, nil},
		{true, true, true, spokenBoth, map[string]prompt.Kind{"call me back": prompt.KindCallback, "a person": prompt.KindHandoff}},
		{true, true, false, spokenCallback, map[string]prompt.Kind{"call me back": prompt.KindCallback}},
		{true, false, true, spokenHandoff, map[string]prompt.Kind{"a person": prompt.KindHandoff}},
		{true, false, false, "", nil},
	} {
		m := &phoneMenu{spoken: tc.spoken, callback: tc.callback, handoff: tc.handoff}
		got := m.sentence()
		if got != tc.want {
			t.Errorf("spoken=%v callback=%v handoff=%v: %q, want %q", tc.spoken, tc.callback, tc.handoff, got, tc.want)
		}
		for words, kind := range tc.answers {
			if !strings.Contains(got, "say "+words) && !strings.Contains(got, "Say "+words) {
				t.Errorf("%q does not name %q", got, words)
			}
			if k := fallback.SpokenAnswer(words); k != kind {
				t.Errorf("SpokenAnswer(%q) = %q, want %q", words, k, kind)
			}
		}
		if tc.spoken && strings.Contains(got, "Press") {
			t.Errorf("a keyless menu names keys: %q", got)
		}
	}
}

// TestKeylessSpokenOffer: a FreeSWITCH caller (mod_audio_fork: no keys)
// in conversation whose turn the model stage refuses hears the offer said
// as words, not keys, answers "call me back" by voice (espeak-ng, heard by
// pocketsphinx) and hears its callback booked to its number.
func TestKeylessSpokenOffer(t *testing.T) {
	t.Parallel()
	k, hm := spokenMidcall(t)
	k.logs.dumpOnFailure(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the model saw %+v", hm.seen())
		}
	})
	// At 16 kHz, which pocketsphinx hears best.
	d := dialect{name: "freeswitch", path: "/v1/freeswitch?rate=16000", codec: freeswitch.Codec{Fork: true, SampleRate: 16000},
		dial: &websocket.DialOptions{Subprotocols: []string{freeswitch.Subprotocol}}}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	k.fillModel()
	g := k.gatewayFor(ctx, d, -1, map[string]string{"tenant": "acme", callerParam: "+15550163"})
	rate := g.Start().Format.SampleRate
	if err := g.SendPCM(ctx, sessiontest.Speech(t, "hello-8k.wav", rate)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendPCM(ctx, silence(600*time.Millisecond, rate)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return echoedPrefix(s.Echoed, "menu~") }); err != nil {
		t.Fatalf("no spoken menu: %v (said %v)", err, k.saidOn(d.name))
	}
	if got := k.saidTextOn(d.name, "menu~"); got != spokenBoth {
		t.Fatalf("menu %q, want %q", got, spokenBoth)
	}
	k.openModel()
	if err := g.SendPCM(ctx, say(t, "Please call me back tomorrow morning.", rate)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendPCM(ctx, silence(800*time.Millisecond, rate)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool { return echoedPrefix(s.Echoed, "callback-queued~") }); err != nil {
		t.Fatalf("no booking confirmed: %v (said %v)", err, k.saidOn(d.name))
	}
	cbs, err := k.svc.ListCallbacks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 1 || cbs[0].Number != "+15550163" || cbs[0].Status != fallback.StatusPending {
		t.Fatalf("callbacks %+v", cbs)
	}
}
