package telephony

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
)

// TestKeylessRefusal: on every dialect whose socket cannot carry keys
// (FreeSWITCH's modules), a refused caller with a number and offers on is
// never asked to press a key: it hears the refusal prompt with no offer
// and no menu, and its call ends at once after it (hung up where the
// dialect can), not after a key wait it could never answer. The menu
// would wait keyWait, far longer than the test's deadline.
func TestKeylessRefusal(t *testing.T) {
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
