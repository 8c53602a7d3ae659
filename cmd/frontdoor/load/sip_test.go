package load_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

// startSIPServer is startPhoneServer whose calls also come in over SIP,
// as frontdoor serve -sip-listen wires them; it returns the HTTP URL and
// the SIP address.
func startSIPServer(t *testing.T, sess stages.Limits, st stub.Settings) (string, string) {
	t.Helper()
	srv, url := startPhoneServer(t, sess, st, telephony.Config{})
	ss, err := sip.Listen(context.Background(), "127.0.0.1:0",
		sip.Config{Handler: telephony.NewSIPHandler(srv.Engine, telephony.SIPConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() }) // before the server closes
	return url, ss.Addr().String()
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
	url, addr := startSIPServer(t, phoneLimits, phoneStub)
	r := phoneRun(t, load.Config{Target: url, Dialect: load.SIP, SIPTarget: addr})
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
