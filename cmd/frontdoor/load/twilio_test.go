package load_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

const (
	twilioToken  = "load-test-token-0123456789"
	twilioPublic = "wss://frontdoor.example.com/v1/twilio"
)

// startTwilioServer is startPhoneServer whose /v1/twilio checks
// X-Twilio-Signature over twilioPublic, as behind a proxy.
func startTwilioServer(t *testing.T, sess stages.Limits, st stub.Settings) string {
	t.Helper()
	_, url := startPhoneServer(t, sess, st, telephony.Config{AuthToken: twilioToken, PublicURL: twilioPublic})
	return url
}

// TestTwilioRun drives the Twilio dialect against the real /v1/twilio over
// real WebSockets. Five callers arrive at once at a session stage of 3 lines
// and 1 place in its queue that expires after 500ms: three are admitted,
// one waits, hears the queue prompt and then the expiry prompt and is
// closed (1013), one is refused at once and hears the refusal prompt
// before its 1013 (the two refusals sound alike, and are counted
// together). Each admitted caller speaks a turn, barges in on the reply
// with its second turn (clear, and nothing of the old reply after it), and
// hears the second reply to its end. The callers' view of the session
// stage matches the server's ledger, and the server's recognize, model and
// synthesis ledgers show that it heard the speech turns.
func TestTwilioRun(t *testing.T) {
	t.Parallel()
	url := startTwilioServer(t, phoneLimits, phoneStub)
	r := phoneRun(t, load.Config{Target: url, Dialect: load.Twilio, TwilioAuthToken: twilioToken, TwilioURL: twilioPublic})
	sess := r.Stages[0]
	if sess.Stage != "session" || sess.Dispositions["admitted"] != 3 || sess.RefusedAtOffer["refused"] != 2 {
		t.Errorf("session stage as the callers heard it: %+v", sess)
	}
	for _, s := range r.Server.Stages {
		switch s.Stage {
		case "recognize":
			if d := s.Delta; d.Offered != 6 || d.Completed != 6 {
				t.Errorf("server recognize ledger %+v: want the 6 speech turns recognized", d)
			}
		case "model", "synthesis":
			if d := s.Delta; d.Offered != 6 || d.Admitted != 6 {
				t.Errorf("server %s ledger %+v: want 6 turns", s.Stage, d)
			}
		}
	}
	if r.Goodput.Good != 6 || r.BargeIn.Latency.N != 3 {
		t.Errorf("goodput %+v, barge-in %+v: want 6 good turns and 3 barge-ins timed", r.Goodput, r.BargeIn)
	}
	if f := r.Fallback; f.PromptFrames == 0 || f.Prompts["spoken"] != 3 {
		t.Errorf("fallback %+v: want the refusal, queue and expiry prompts heard", f)
	}
	if s := r.Summary(); !strings.Contains(s, "cleared") || !strings.Contains(s, "server turn stages: ") {
		t.Errorf("summary lacks the Twilio lines:\n%s", s)
	}
}

// A caller whose upgrade is not signed with the server's auth token is
// refused before any WebSocket exists (403), and no stage sees it.
func TestTwilioBadSignature(t *testing.T) {
	url := startTwilioServer(t, roomy(2), stub.Settings{})
	for _, tc := range []struct{ name, token, url string }{
		{"other token", "another-token", twilioPublic},
		{"dialed URL, not the public one", twilioToken, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := load.Run(context.Background(), load.Config{Target: url, Dialect: load.Twilio,
				TwilioAuthToken: tc.token, TwilioURL: tc.url, Callers: 1, Rate: 1, Turns: 1, Duration: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Callers.ByEnd[load.EndError] != 1 || r.Turns.Offered != 0 {
				t.Errorf("callers %+v: want the upgrade refused", r.Callers)
			}
			for _, s := range r.Server.Stages {
				if s.Delta.Offered != 0 {
					t.Errorf("stage %s saw %d offers", s.Stage, s.Delta.Offered)
				}
			}
		})
	}
}
