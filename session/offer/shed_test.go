package offer

import (
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestShedRefusalsOfferNothing is the shedding rule: with ShedRate 1, the
// first refusal of a second is told and offered in full; the second within
// the same second is still told (the prompt table's sentence, with its
// audio) but offers nothing, so the refused caller is closed at once with
// 1013 instead of waiting for an answer, and the shed is counted.
func TestShedRefusalsOfferNothing(t *testing.T) {
	wire, after, _ := withOffers(t)
	r := newRig(t, wire, after, func(c *session.Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
		c.ShedRate = 1
	})
	r.Admitted()
	r.Dial().Expect("prompt") // queued: not a refusal, never shed

	first := r.Dial()
	all := first.Until(sessiontest.IsType("audio_end"))
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "overloaded" {
		t.Fatalf("first refused call: %v", sessiontest.Types(all))
	}
	if o := sessiontest.LastOf(all, "offer"); len(o.Kinds) == 0 {
		t.Fatalf("the first refusal of the second offered nothing: %v", sessiontest.Types(all))
	}

	second := r.Dial()
	var heard []sessiontest.Msg
	for {
		m, err := second.Read()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Fatalf("shed call closed with %v, want 1013", err)
			}
			break
		}
		heard = append(heard, m)
	}
	if s := sessiontest.LastOf(heard, "session"); s.Disposition != "overloaded" {
		t.Fatalf("shed call: %v", sessiontest.Types(heard))
	}
	if p := sessiontest.LastOf(heard, "prompt"); p.Text == "" {
		t.Fatalf("shed refusal not told: %v", sessiontest.Types(heard))
	}
	if o := sessiontest.LastOf(heard, "offer"); o.Type != "" {
		t.Fatalf("shed refusal offered %v", o.Kinds)
	}
	if sessiontest.LastOf(heard, "audio_start").Type == "" {
		t.Fatalf("shed refusal's prompt without audio: %v", sessiontest.Types(heard))
	}
	if n := r.Counter("frontdoor_refusals_shed_total"); n != 1 {
		t.Fatalf("frontdoor_refusals_shed_total = %v, want 1", n)
	}
}
