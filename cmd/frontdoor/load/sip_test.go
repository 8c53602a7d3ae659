package load_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

// startSIPServer is an in-process frontdoor with a recognizer whose calls
// also come in over SIP, as frontdoor serve -sip-listen wires them; it
// returns the HTTP URL and the SIP address.
func startSIPServer(t *testing.T, sess stages.Limits, st stub.Settings) (string, string) {
	t.Helper()
	model, synth, rec := stub.NewModel(st), stub.NewSynthesizer(st), stub.NewRecognizer(st)
	turn := stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second}
	srv, err := server.New(server.Config{Config: session.Config{
		Session: sess, Recognize: turn, Model: turn, Synthesis: turn,
		ModelBackend: model, Synthesizer: synth, Recognizer: rec,
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	ss, err := sip.Listen(context.Background(), "127.0.0.1:0",
		sip.Config{Handler: telephony.NewSIPHandler(srv.Engine, telephony.SIPConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ss.Close()
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
		_ = model.Close()
		_ = synth.Close()
		_ = rec.Close()
	})
	return hs.URL, ss.Addr().String()
}

// TestSIPRun drives -protocol sip against the real SIP wiring, real SIP
// calls with RTP over loopback. Five callers arrive at once at a session
// stage of 3 lines and 1 place in its queue that expires after 500ms:
// three are admitted, speak a turn, barge in on its reply with a second
// (the reply stops, nothing of it arrives while the caller speaks) and
// hear the second reply to its end; the other two hear prompts and are
// hung up (BYE): refused, counted together. The callers' view of the
// session stage matches the server's ledger.
func TestSIPRun(t *testing.T) {
	st := stub.Settings{ModelDelay: 20 * time.Millisecond, TokenDelay: 2 * time.Millisecond, Tokens: 3,
		SynthDelay: 10 * time.Millisecond, FrameCount: 30, CleanupDelay: 5 * time.Millisecond}
	url, addr := startSIPServer(t, stages.Limits{Slots: 3, Waiting: 1, MaxAge: 500 * time.Millisecond}, st)
	r, err := load.Run(context.Background(), load.Config{
		Target: url, Dialect: load.SIP, SIPTarget: addr,
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
	if !r.Server.Matches {
		t.Errorf("server ledgers differ from the callers' view: %+v", r.Server.Stages)
	}
	for _, s := range r.Server.Stages {
		if s.Stage == "session" {
			if d := s.Delta; d.Admitted != 3 || d.Refused.Overloaded != 1 || d.Expired != 1 {
				t.Errorf("server session ledger %+v", d)
			}
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
	if f := r.Fallback; f.PromptFrames == 0 {
		t.Errorf("fallback %+v: want the prompts heard", f)
	}
	if s := r.Summary(); !strings.Contains(s, "server turn stages: ") {
		t.Errorf("summary lacks the phone lines:\n%s", s)
	}
}

// TestSIPTarget: the SIP address is checked as the HTTP target is.
func TestSIPTarget(t *testing.T) {
	for _, tc := range []struct {
		target string
		err    error
	}{
		{"192.0.2.1:5060", load.ErrRemoteTarget},
		{"sip.example.com:5060", load.ErrBadConfig},
		{"127.0.0.1", load.ErrBadConfig},
	} {
		_, err := load.Run(context.Background(), load.Config{Target: "http://127.0.0.1:1", Dialect: load.SIP,
			SIPTarget: tc.target, Callers: 1, Rate: 1})
		if !errors.Is(err, tc.err) {
			t.Errorf("-sip-target %s: %v, want %v", tc.target, err, tc.err)
		}
	}
}
