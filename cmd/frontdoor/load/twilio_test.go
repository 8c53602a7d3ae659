package load_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

const (
	twilioToken  = "load-test-token-0123456789"
	twilioPublic = "wss://frontdoor.example.com/v1/twilio"
)

// startTwilioServer is an in-process frontdoor with a recognizer (speech
// turns need one) whose /v1/twilio checks X-Twilio-Signature over
// twilioPublic, as behind a proxy.
func startTwilioServer(t *testing.T, sess stages.Limits, st stub.Settings) string {
	t.Helper()
	model, synth, rec := stub.NewModel(st), stub.NewSynthesizer(st), stub.NewRecognizer(st)
	turn := stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second}
	srv, err := server.New(server.Config{Config: session.Config{
		Session: sess, Recognize: turn, Model: turn, Synthesis: turn,
		ModelBackend: model, Synthesizer: synth, Recognizer: rec,
	}, Twilio: telephony.Config{AuthToken: twilioToken, PublicURL: twilioPublic}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
		_ = model.Close()
		_ = synth.Close()
		_ = rec.Close()
	})
	return hs.URL
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
	st := stub.Settings{ModelDelay: 20 * time.Millisecond, TokenDelay: 2 * time.Millisecond, Tokens: 3,
		SynthDelay: 10 * time.Millisecond, FrameCount: 30, CleanupDelay: 5 * time.Millisecond}
	url := startTwilioServer(t, stages.Limits{Slots: 3, Waiting: 1, MaxAge: 500 * time.Millisecond}, st)
	r, err := load.Run(context.Background(), load.Config{
		Target: url, Dialect: load.Twilio, TwilioAuthToken: twilioToken, TwilioURL: twilioPublic,
		Callers: 5, Rate: 10, Arrival: load.Burst, BurstSize: 5,
		Turns: 2, Utterance: 400 * time.Millisecond, Settle: 300 * time.Millisecond,
		BargeIn: 1, BargeAfter: 100 * time.Millisecond,
		Deadline: 2 * time.Second, Duration: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	c := r.Callers
	if c.Offered != 5 || !c.Balanced || c.ByEnd[load.EndServed] != 3 || c.ByEnd[load.EndRefused] != 2 {
		t.Errorf("callers %+v: want 3 served, 2 refused", c)
	}
	sess := r.Stages[0]
	if sess.Stage != "session" || sess.Dispositions["admitted"] != 3 || sess.RefusedAtOffer["refused"] != 2 {
		t.Errorf("session stage as the callers heard it: %+v", sess)
	}
	if !r.Server.Matches {
		t.Errorf("server ledgers differ from the callers' view: %+v", r.Server.Stages)
	}
	for _, s := range r.Server.Stages {
		switch s.Stage {
		case "session":
			if d := s.Delta; d.Admitted != 3 || d.Refused.Overloaded != 1 || d.Expired != 1 {
				t.Errorf("server session ledger %+v", d)
			}
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
	tl := r.Turns
	if tl.Offered != 6 || !tl.Balanced || tl.ByEnd["completed"] != 3 || tl.ByEnd["cancelled"] != 3 {
		t.Errorf("turns %+v: want 6, the 3 interrupted ones cancelled", tl)
	}
	if r.FirstAud.N != 6 || r.Goodput.Good != 6 || r.Jitter.N == 0 {
		t.Errorf("first audio %v, goodput %+v, jitter n=%d: want reply audio for every turn", r.FirstAud, r.Goodput, r.Jitter.N)
	}
	if b := r.BargeIn; b.Sent != 3 || b.Interrupted != 3 || b.StaleAfter != 0 || b.Latency.N != 3 {
		t.Errorf("barge-in %+v: want 3 cleared, no stale media", b)
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
	url := startTwilioServer(t, stages.Limits{Slots: 2, Waiting: 2, MaxAge: time.Second}, stub.Settings{})
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
