package load_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The phone-line runs (SIP, Twilio) share one scenario: five callers at
// once against a session stage of 3 slots and 1 place in the queue, with
// backends quick enough that every admitted turn is answered.
var (
	phoneLimits = stages.Limits{Slots: 3, Waiting: 1, MaxAge: 500 * time.Millisecond}
	phoneStub   = stub.Settings{ModelDelay: 20 * time.Millisecond, TokenDelay: 2 * time.Millisecond, Tokens: 3,
		SynthDelay: 10 * time.Millisecond, FrameCount: 30, CleanupDelay: 5 * time.Millisecond}
)

// startPhoneServer is an in-process frontdoor with a recognizer (speech
// turns need one), its session stage sess, roomy turn stages, and the
// telephony config tw; it returns the server and its HTTP URL, and the
// test's end closes both.
func startPhoneServer(t *testing.T, sess stages.Limits, st stub.Settings, tw telephony.Config) (*server.Server, string) {
	t.Helper()
	model, synth, rec := stub.NewModel(st), stub.NewSynthesizer(st), stub.NewRecognizer(st)
	turn := stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second}
	srv, err := server.New(server.Config{Config: session.Config{
		Session: sess, Recognize: turn, Model: turn, Synthesis: turn,
		ModelBackend: model, Synthesizer: synth, Recognizer: rec,
	}, Twilio: tw})
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
	return srv, hs.URL
}

// phoneRun runs the phone-line scenario over the dialect cfg names and
// checks what holds whatever the dialect: three callers served, two
// refused (one overloaded, one expired in the queue), the ledgers of both
// sides matching, and each served caller's two turns answered, the first
// interrupted by a barge-in with no stale audio after it.
func phoneRun(t *testing.T, cfg load.Config) *load.Report {
	t.Helper()
	cfg.Callers, cfg.Rate, cfg.Arrival, cfg.BurstSize = 5, 10, load.Burst, 5
	cfg.Turns, cfg.Utterance, cfg.Settle = 2, 400*time.Millisecond, 300*time.Millisecond
	cfg.BargeIn, cfg.BargeAfter = 1, 100*time.Millisecond
	cfg.Deadline, cfg.Duration = 2*time.Second, 20*time.Second
	r, err := load.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	c := r.Callers
	if c.Offered != 5 || !c.Balanced || c.ByEnd[load.EndServed] != 3 || c.ByEnd[load.EndRefused] != 2 {
		t.Errorf("callers %+v: want 3 served, 2 refused", c)
	}
	if !r.Server.Matches {
		t.Errorf("server ledgers differ from the callers' view: %+v", r.Server.Stages)
	}
	for _, s := range r.Server.Stages {
		if d := s.Delta; s.Stage == "session" && (d.Admitted != 3 || d.Refused.Overloaded != 1 || d.Expired != 1) {
			t.Errorf("server session ledger %+v", d)
		}
	}
	tl := r.Turns
	if tl.Offered != 6 || !tl.Balanced || tl.ByEnd["completed"] != 3 || tl.ByEnd["cancelled"] != 3 {
		t.Errorf("turns %+v: want 6, the 3 interrupted ones cancelled", tl)
	}
	if r.FirstAud.N != 6 || r.Jitter.N == 0 {
		t.Errorf("first audio %v, jitter n=%d: want reply audio for every turn", r.FirstAud, r.Jitter.N)
	}
	if b := r.BargeIn; b.Sent != 3 || b.Interrupted != 3 || b.StaleAfter != 0 {
		t.Errorf("barge-in %+v: want 3 cleared, no stale audio", b)
	}
	return r
}
