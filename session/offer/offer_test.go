package offer

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// withOffers wires package fallback in as the rig's Fallback.
func withOffers(t *testing.T) (func(*session.Config, *stub.Settings), sessiontest.After, **fallback.Service) {
	return withOffersPrompt(t, 3)
}

// withOffersPrompt is withOffers with prompt audio of frames 20 ms frames.
func withOffersPrompt(t *testing.T, frames int) (func(*session.Config, *stub.Settings), sessiontest.After, **fallback.Service) {
	var svc *fallback.Service
	var offers *Offers
	cfg := func(c *session.Config, s *stub.Settings) {
		fc := fallback.DefaultConfig()
		fc.DataDir = t.TempDir()
		var err error
		svc, err = fallback.New(context.Background(), fc, Synthesizer(stub.NewSynthesizer(stub.Settings{FrameCount: frames, Rate: 8000})), nil)
		if err != nil {
			t.Fatal(err)
		}
		offers = New(svc)
		offers.OfferWindow = 2 * time.Second
		c.Fallback = offers
	}
	after := func() {
		offers.Wait()
		svc.Close()
	}
	return cfg, sessiontest.After(after), &svc
}

// TestOffersSessionRefused: a caller refused by a full session stage hears
// the prompt as audio, is offered a callback or a person, books a callback
// (durably, with a ticket) and is then closed with 1013.
func TestOffersSessionRefused(t *testing.T) {
	fb, after, _ := withOffers(t)
	r := newRig(t, fb, after, func(c *session.Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
	})
	r.Admitted()
	r.Dial().Expect("prompt") // queued
	c := r.Dial()
	// The offer is a control message: it is on the wire before the
	// prompt's audio has played; read on to the audio's end.
	all := c.Until(sessiontest.IsType("audio_end"))
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "overloaded" {
		t.Fatalf("%v", sessiontest.Types(all))
	}
	var audio int
	for _, m := range all {
		audio += m.Bytes
	}
	if o := sessiontest.LastOf(all, "offer"); len(o.Kinds) != 2 {
		t.Fatalf("offer %+v", o)
	}
	if sessiontest.LastOf(all, "audio_start").Type == "" || audio == 0 {
		t.Fatalf("prompt without audio: %v", sessiontest.Types(all))
	}
	c.Send(map[string]any{"type": "callback", "consent": false, "number": "+15550123"})
	if m := c.Expect("error"); m.Code != wire.CodeBadField {
		t.Fatalf("callback without consent: %+v", m)
	}
	c.Send(map[string]any{"type": "callback", "consent": true, "number": "+1 555 0123"})
	m := c.Expect("callback")
	if m.Disposition != "queued" || m.Ref == "" {
		t.Fatalf("callback %+v", m)
	}
	if _, err := c.Read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("close %v, want 1013", err)
	}
}

// TestOffersPromptAudioWhileSynthesisFull: the prompt of a refused turn is
// heard as audio even while the synthesis stage is saturated.
func TestOffersPromptAudioWhileSynthesisFull(t *testing.T) {
	fb, after, _ := withOffers(t)
	r := newRig(t, fb, after, func(c *session.Config, s *stub.Settings) {
		c.Synthesis = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
		// a's reply holds the only slot for 5 s, far longer than the
		// test, so that b still holds the only waiting place when c asks.
		s.FrameCount, s.FrameDelay = 100, 50*time.Millisecond
	})
	a, b, c := r.Admitted(), r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(sessiontest.IsType("audio_start"))
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	b.Until(func(m sessiontest.Msg) bool {
		return m.Type == "disposition" && m.Stage == session.StageSynthesis && m.Disposition == "queued"
	})
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "x"})
	// The prompt's audio is queued before the turn ends, and the writer
	// may have written all of it by then: turn_end and the prompt's
	// audio_end come in either order.
	all := c.UntilAll("audio_end", "turn_end")
	if end := sessiontest.LastOf(all, "turn_end"); end.Disposition != "overloaded" || end.Stage != session.StageSynthesis {
		t.Fatalf("%v", sessiontest.Types(all))
	}
	var audio int
	for _, m := range all {
		audio += m.Bytes
	}
	if p := sessiontest.LastOf(all, "prompt"); p.Stage != session.StageSynthesis || audio == 0 {
		t.Fatalf("prompt %+v audio %d: %v", p, audio, sessiontest.Types(all))
	}
	if sessiontest.LastOf(all, "offer").Type == "" {
		t.Fatalf("no offer: %v", sessiontest.Types(all))
	}
}

// TestOffersOfferWithPrompt: a caller who answers with messages gets the
// offer right with the prompt, not once the prompt's audio is rendered
// and queued (here rendering takes a second); answering at once cuts the
// prompt's audio before any of it is written, and the prompt's later
// rendering queues none of it.
func TestOffersOfferWithPrompt(t *testing.T) {
	var svc *fallback.Service
	var offers *Offers
	r := newRig(t, func(c *session.Config, s *stub.Settings) {
		s.FailRate = 1 // every turn's model fails
		fc := fallback.DefaultConfig()
		fc.DataDir = t.TempDir()
		var err error
		svc, err = fallback.New(context.Background(), fc,
			Synthesizer(stub.NewSynthesizer(stub.Settings{SynthDelay: time.Second, FrameCount: 50, Rate: 8000})), nil)
		if err != nil {
			t.Fatal(err)
		}
		offers = New(svc)
		c.Fallback = offers
	}, sessiontest.After(func() { offers.Wait(); svc.Close() }))
	c := r.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "t1", "text": "x"})
	all := c.Until(sessiontest.IsType("offer"))
	p, o := sessiontest.LastOf(all, "prompt"), sessiontest.LastOf(all, "offer")
	if p.Reason != wire.TurnFailed || len(o.Kinds) != 2 || sessiontest.LastOf(all, "audio_start").Type != "" {
		t.Fatalf("want prompt, then offer before any audio: %v", sessiontest.Types(all))
	}
	c.Send(map[string]any{"type": "callback", "consent": true, "number": "+15550123"})
	rest := c.Until(sessiontest.IsType("turn_end")) // sent once the prompt's audio was rendered and dropped
	if cb := sessiontest.LastOf(rest, "callback"); cb.Disposition != "queued" || cb.Ref == "" {
		t.Fatalf("callback %+v: %v", cb, sessiontest.Types(rest))
	}
	c.Send(map[string]any{"type": "hangup"})
	for {
		m, err := c.Read()
		if err != nil {
			break
		}
		rest = append(rest, m)
	}
	for _, m := range rest {
		if m.Type == "audio_start" || m.Type == "binary" || m.Type == "audio_end" {
			t.Fatalf("audio of the answered prompt was written: %v", sessiontest.Types(rest))
		}
	}
}

// TestOffersSyntheticRefused: an answer marked synthetic (the load
// generator's callers) is refused with code synthetic and a reason, and
// nothing reaches the operators' queue; the same answer unmarked is booked.
func TestOffersSyntheticRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    map[string]any
		want      string // the reply's type
		callbacks int
	}{
		{"synthetic callback", map[string]any{"type": "callback", "consent": true, "number": "+15550100", "synthetic": true}, "error", 0},
		{"synthetic handoff", map[string]any{"type": "handoff", "synthetic": true}, "error", 0},
		{"real callback", map[string]any{"type": "callback", "consent": true, "number": "+15550123"}, "callback", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb, after, svc := withOffers(t)
			r := newRig(t, fb, after, func(c *session.Config, s *stub.Settings) {
				c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
			})
			r.Admitted()
			r.Dial().Expect("prompt") // queued
			c := r.Dial()
			c.Until(sessiontest.IsType("offer"))
			c.Send(tc.answer)
			m := c.Expect(tc.want)
			if tc.want == "error" && (m.Code != CodeSynthetic || m.Message == "") {
				t.Fatalf("reply %+v, want code %s with a reason", m, CodeSynthetic)
			}
			list, err := (*svc).ListCallbacks(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != tc.callbacks {
				t.Fatalf("%d callbacks in the operators' queue, want %d", len(list), tc.callbacks)
			}
		})
	}
}
