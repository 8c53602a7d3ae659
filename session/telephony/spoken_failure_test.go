package telephony

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// failingAnswers is an answer recognizer that fails every time, as one
// timed out or gone would.
type failingAnswers struct{}

func (failingAnswers) Recognize(context.Context, backend.Audio) (string, error) {
	return "", errors.New("answers: recognizer gone")
}

// TestSpokenAnswerRecognizerFails: a refused caller who answers the offer
// in words while the answer recognizer fails (timed out under load, its
// process gone) is told that the answer was not caught and asked again,
// as for words that answer nothing; it is not left in silence until the
// menu's wait runs out (a CI flake under load found this).
func TestSpokenAnswerRecognizerFails(t *testing.T) {
	t.Parallel()
	t.Run("native", func(t *testing.T) {
		k := offersHeardBy(t, failingAnswers{})
		c := k.Dial()
		defer c.Conn.CloseNow()
		c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
		c.Expect("offer")
		speech := append(sayVoice(t, "en-us", "A person please.", 16000), make([]int16, 16000)...)
		for len(speech) > 0 {
			n := min(320, len(speech))
			if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, speech[:n])); err != nil {
				t.Fatal(err)
			}
			speech = speech[n:]
		}
		if p := c.Expect("prompt"); p.Stage != prompt.StageOffer || p.Reason != prompt.ReasonUnheard {
			t.Fatalf("prompt %+v, want the offer's %s", p, prompt.ReasonUnheard)
		}
	})
	t.Run("twilio", func(t *testing.T) {
		k := offersHeardBy(t, failingAnswers{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g := k.dialRefused(ctx, t, "+15550170099")
		defer g.Close()
		if err := g.SendPCM(ctx, sayVoice(t, "en-us", "A person please.", 8000)); err != nil {
			t.Fatal(err)
		}
		if err := g.SendSilence(ctx, 800*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		sessiontest.WaitFor(t, "the caller asked again", func() bool {
			return len(k.logs.find("twilio: spoken answer not understood")) == 1
		})
		// The menu again, with the words that say the answer was not caught.
		if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return echoedN(s, "menu~") == 2 }); err != nil {
			t.Fatalf("the menu was not said again: %v (said %v)", err, k.said())
		}
	})
}

// echoedN counts the utterances named prefix whose marks came back.
func echoedN(s twiliotest.Snapshot, prefix string) int {
	n := 0
	for _, m := range s.Echoed {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}
