package telephony

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

func (r *rig) gateway(ctx context.Context, opts twiliotest.Options) *twiliotest.Gateway {
	r.T.Helper()
	g, err := twiliotest.Dial(ctx, r.WSURL("/v1/twilio"), opts)
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(g.Close)
	return g
}

func mediaAfter(log []twilio.Outbound, i int) int {
	n := 0
	for _, o := range log[i:] {
		if o.Event == twilio.EventMedia {
			n++
		}
	}
	return n
}

func indexOf(log []twilio.Outbound, event string) int {
	for i, o := range log {
		if o.Event == event {
			return i
		}
	}
	return -1
}

// TestTwilioCall: a scripted gateway speaks (espeak "hello"), hears a reply
// as paced media followed by a mark, speaks over it ("stop"): frontdoor sends
// clear, nothing of the interrupted reply after it, reports what the caller
// heard (from the marks and the playback clock) and gives the model only
// that part of the reply in its history. The second utterance gets its own
// reply; stop ends the call.
func TestTwilioCall(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	hm := &historyModel{}
	r := newRig(t, func(c *session.Config, s *stub.Settings) {
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
		c.Logger = slog.New(logs)
		s.Rate = 16000
		s.FrameCount = 150 // a 3 s reply
		s.Tokens = 12
	})
	hm.Model = r.modelBackend()
	r.setModelBackend(hm)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := r.gateway(ctx, twiliotest.Options{Speed: 2, CustomParameters: map[string]string{"caller": "+15550100"}})
	logs.waitAdmitted(t, 1)

	if err := g.SendPCM(ctx, sessiontest.Speech(t, "hello-8k.wav", 8000)); err != nil {
		t.Fatal(err)
	}
	if err := g.SendSilence(ctx, 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The reply plays: wait until a second of it was received.
	if _, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Received >= time.Second }); err != nil {
		t.Fatal(err)
	}
	if s := g.Snapshot(); s.Received > 1500*time.Millisecond {
		t.Fatalf("reply not paced: %v received after 1 s of playback", s.Received)
	}
	stop := sessiontest.Speech(t, "stop-8k.wav", 8000)
	half := len(stop) * 2 / 3
	if err := g.SendPCM(ctx, stop[:half]); err != nil { // still speaking after this
		t.Fatal(err)
	}
	s, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return indexOf(s.Log, twilio.EventClear) >= 0 })
	if err != nil {
		t.Fatal(err)
	}
	clearAt := indexOf(s.Log, twilio.EventClear)
	// The rest of the speech, without the trailing silence that would end it.
	if err := g.SendPCM(ctx, stop[half:len(stop)-5600]); err != nil {
		t.Fatal(err)
	}
	// While the caller was still speaking no new reply could start, so any
	// media after the clear would be the old generation's.
	if n := mediaAfter(g.Snapshot().Log, clearAt); n != 0 {
		t.Fatalf("%d media frames after clear while the caller spoke", n)
	}
	heard := s.Heard
	if err := g.SendSilence(ctx, 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The second utterance is answered: media and a mark after the clear.
	s, err = g.Wait(ctx, func(s twiliotest.Snapshot) bool {
		return mediaAfter(s.Log, clearAt) > 0 && indexOf(s.Log[clearAt:], twilio.EventMark) >= 0
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range s.Log[clearAt:] {
		if o.Event == twilio.EventMark && strings.HasPrefix(o.Mark, "speech-1") {
			t.Fatalf("mark of the interrupted reply after clear: %q", o.Mark)
		}
		if o.StreamSID != "MZ00000000000000000000000000000000" {
			t.Fatalf("outbound without the stream SID: %+v", o)
		}
	}

	// What the caller heard of the first reply was reported and truncated
	// the history the model saw for the second turn.
	in := logs.find("twilio: interrupted")
	if len(in) != 1 {
		t.Fatalf("interrupted logged %d times", len(in))
	}
	heardMS := in[0]["heard_ms"].(int64)
	if heardMS < 500 || heardMS > 3000 {
		t.Fatalf("heard %d ms of a 3 s reply interrupted after >1 s", heardMS)
	}
	if d := time.Duration(heardMS)*time.Millisecond - heard; d < -300*time.Millisecond || d > 300*time.Millisecond {
		t.Logf("frontdoor says %d ms heard, the gateway played %v", heardMS, heard)
	}
	sessiontest.WaitFor(t, "second model turn", func() bool { return len(hm.seen()) >= 2 })
	second := hm.seen()[1]
	var assistant *backend.Message
	for i := range second.History {
		if second.History[i].Role == backend.RoleAssistant {
			assistant = &second.History[i]
		}
	}
	full := strings.Join(r.Model.Deltas(hm.seen()[0].Text), "")
	if assistant == nil || assistant.Content == "" || len(assistant.Content) >= len(strings.TrimSpace(full)) {
		t.Fatalf("history after barge-in %+v (full reply %q)", second.History, full)
	}
	if !strings.HasPrefix(full, assistant.Content) && !strings.HasPrefix(strings.Join(strings.Fields(full), " "), assistant.Content) {
		t.Fatalf("history %q is not a prefix of the reply %q", assistant.Content, full)
	}

	if err := g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ = g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
	if websocket.CloseStatus(s.Err) != websocket.StatusNormalClosure {
		t.Fatalf("closed with %v after stop", s.Err)
	}
	if v := r.stage(session.StageRecognize); v.Ledger.Completed < 2 {
		t.Fatalf("recognize ledger %+v", v.Ledger)
	}
}

// TestTwilioRefused: with the session stage full, the gateway's call waits,
// expires, hears the truthful prompt as audio with a mark after it (echoed
// once played), and then the socket closes with 1013.
func TestTwilioRefused(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	r := newRig(t, func(c *session.Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 100 * time.Millisecond}
		c.Logger = slog.New(logs)
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
		s.FrameCount = 25
	})
	holder := r.Admitted()
	defer holder.Send(map[string]any{"type": "hangup"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := r.gateway(ctx, twiliotest.Options{Speed: -1})
	s, err := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
	if err != nil {
		t.Fatal(err)
	}
	if websocket.CloseStatus(s.Err) != websocket.StatusTryAgainLater {
		t.Fatalf("closed with %v, want 1013", s.Err)
	}
	if s.Received < 500*time.Millisecond || len(s.Echoed) == 0 {
		t.Fatalf("refused call heard %v of prompt, echoed %v", s.Received, s.Echoed)
	}
	if last := s.Log[len(s.Log)-1]; last.Event != twilio.EventMark {
		t.Fatalf("the prompt does not end with a mark: %+v", last)
	}
	if p := logs.find("twilio: prompt"); len(p) != 2 || p[0]["reason"] != "queued" || p[1]["reason"] != "expired" {
		t.Fatalf("prompts %v", p)
	}
}

// TestTwilioSignature: with an auth token configured, only an upgrade
// signed over the configured public URL is accepted.
func TestTwilioSignature(t *testing.T) {
	t.Parallel()
	const token, public = "test-token-0123456789", "wss://frontdoor.example.com/v1/twilio"
	r := newRig(t, rigTwilio(func(c *Config) {
		c.AuthToken, c.PublicURL = token, public
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		sig  string
		ok   bool
	}{
		{"valid", twilio.Signature(token, public, nil), true},
		{"missing", "", false},
		{"https rebuild", twilio.Signature(token, "https://frontdoor.example.com/v1/twilio", nil), false},
		{"other token", twilio.Signature("another-token", public, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.sig != "" {
				h.Set("X-Twilio-Signature", tc.sig)
			}
			g, err := twiliotest.Dial(ctx, r.WSURL("/v1/twilio"), twiliotest.Options{Header: h})
			if !tc.ok {
				if err == nil {
					g.Close()
					t.Fatal("unsigned upgrade accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if err := g.SendStop(ctx); err != nil {
				t.Fatal(err)
			}
			s, _ := g.Wait(ctx, func(s twiliotest.Snapshot) bool { return s.Err != nil })
			if websocket.CloseStatus(s.Err) != websocket.StatusNormalClosure {
				t.Fatalf("closed with %v", s.Err)
			}
		})
	}
	if !errors.Is(twilio.ValidateRequest(&http.Request{Header: http.Header{}}, token, public), twilio.ErrSignature) {
		t.Fatal("ValidateRequest accepted no signature")
	}
}
