package telephony

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The offer's answers end to end, in words: a caller refused by the
// session stage (its one slot held, its wait expired) is offered a
// callback and a person and answers by voice, espeak-ng speaking for it in
// two voices, heard by the answer recognizer frontdoor serve builds (a
// pocketsphinx grammar of fallback.AnswerPhrases), on the native WebSocket
// (PCM16 at 16 and 8 kHz) and on Twilio (8 kHz µ-law, its only format).
var (
	answerVoices  = []string{"en-us", "en-us+f3"}
	spokenAnswers = []struct{ name, text string }{
		{"callback", "Please call me back."},
		{"handoff", "A person please."},
		{"decline", "No, thank you."},
	}
)

// spokenOffers is a keypad rig whose session stage has one slot, held,
// and whose engine hears answers with the answer recognizer.
func spokenOffers(t *testing.T) *keypad { t.Helper(); return offersHeardBy(t, answerRecognizer(t)) }

// offersHeardBy is spokenOffers with rec as the answer recognizer.
func offersHeardBy(t *testing.T, rec backend.Recognizer) *keypad {
	t.Helper()
	k := wireKeypad(t, keypadOptions{window: 20 * time.Second, keyWait: 15 * time.Second}, func(c *session.Config, _ *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 200 * time.Millisecond}
		c.Answers = rec
	})
	holder := k.Admitted()
	t.Cleanup(holder.HangUp)
	return k
}

// TestSpokenAnswersNative: on /v1/session "a person please" queues a
// handoff, "no, thank you" ends the offer with the prompt that says
// nothing was arranged (then 1013), and "please call me back" is heard as
// a callback that cannot be booked without a number, which the caller is
// told in words.
func TestSpokenAnswersNative(t *testing.T) {
	t.Parallel()
	k := spokenOffers(t)
	for _, v := range answerVoices {
		for _, rate := range []int{16000, 8000} {
			for _, a := range spokenAnswers {
				t.Run(fmt.Sprintf("%s/%dkHz/%s", v, rate/1000, a.name), func(t *testing.T) {
					c := k.Dial()
					defer c.Conn.CloseNow()
					c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": rate}})
					c.Expect("offer")
					speech := append(sayVoice(t, v, a.text, rate), make([]int16, rate)...)
					for n := rate / 50; len(speech) > 0; {
						n = min(n, len(speech))
						if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
							t.Fatal(err)
						}
						speech = speech[n:]
					}
					switch a.name {
					case "handoff":
						if h := c.Expect("handoff"); h.Disposition != "queued" || h.Ref == "" {
							t.Fatalf("handoff %+v", h)
						}
						c.Send(map[string]any{"type": "hangup"})
					case "decline":
						if p := c.Expect("prompt"); p.Stage != prompt.StageOffer || p.Reason != prompt.ReasonDeclined {
							t.Fatalf("prompt %+v", p)
						}
						for {
							if _, err := c.Read(); err != nil {
								if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
									t.Fatalf("closed with %v, want 1013", err)
								}
								break
							}
						}
					case "callback":
						if p := c.Expect("prompt"); p.Stage != prompt.StageOffer || p.Reason != prompt.ReasonNoNumber {
							t.Fatalf("prompt %+v", p)
						}
						c.Send(map[string]any{"type": "hangup"})
					}
				})
			}
		}
	}
}

// TestSpokenAnswersTwilio: on /v1/twilio, after the keypad menu, "please
// call me back" books a callback to the caller's number, "a person please"
// holds for a person, and "no, thank you" declines the menu: the caller
// hears that nothing was arranged, then 1013.
func TestSpokenAnswersTwilio(t *testing.T) {
	t.Parallel()
	k := spokenOffers(t)
	n := 0
	for _, v := range answerVoices {
		for _, a := range spokenAnswers {
			n++
			t.Run(fmt.Sprintf("%s/8kHz/%s", v, a.name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				number := fmt.Sprintf("+1555017%d", n)
				g := k.dialRefused(ctx, t, number)
				defer g.Close()
				if err := g.SendPCM(ctx, sayVoice(t, v, a.text, 8000)); err != nil {
					t.Fatal(err)
				}
				if err := g.SendSilence(ctx, 800*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				switch a.name {
				case "callback":
					closedAfter(ctx, t, g, "callback-queued~")
					cbs, err := k.svc.ListCallbacks(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					found := false
					for _, cb := range cbs {
						found = found || cb.Number == number
					}
					if !found {
						t.Fatalf("no callback to %s in %+v", number, cbs)
					}
				case "handoff":
					if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return echoed(s, "handoff-queued~") }); err != nil {
						t.Fatalf("hold prompt not played: %v (said %v)", err, k.said())
					}
				case "decline":
					closedAfter(ctx, t, g, "offer-declined~")
				}
			})
		}
	}
}

// TestSpokenAnswerNotUnderstood: a refused caller on /v1/session whose
// words answer nothing is asked again once, then hears that nothing was
// arranged and the call ends (1013): no question asked forever.
func TestSpokenAnswerNotUnderstood(t *testing.T) {
	t.Parallel()
	k := spokenOffers(t)
	c := k.Dial()
	defer c.Conn.CloseNow()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	c.Expect("offer")
	for _, want := range []string{prompt.ReasonUnheard, prompt.ReasonUnanswered} {
		speech := append(sayVoice(t, "en-us", "What are your opening hours?", 16000), make([]int16, 16000)...)
		for len(speech) > 0 {
			n := min(320, len(speech))
			if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
				t.Fatal(err)
			}
			speech = speech[n:]
		}
		if p := c.Expect("prompt"); p.Stage != prompt.StageOffer || p.Reason != want {
			t.Fatalf("prompt %+v, want %s", p, want)
		}
	}
	for {
		if _, err := c.Read(); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Fatalf("closed with %v, want 1013", err)
			}
			return
		}
	}
}
