package twiliotest

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/media/vad"
	"github.com/frontdoorhq/frontdoor/media/wav"
)

func tone(d time.Duration) []int16 {
	n := int(d.Seconds() * 8000)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	return s
}

func speech(t *testing.T, name string) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return a.Samples
}

// agent is a minimal frontdoor-like endpoint built only from package twilio
// and vad: it answers the caller's first utterance with reply1, follows with
// reply2 once reply1's mark returns, and clears on speech during reply2.
type agent struct {
	t        *testing.T
	started  chan *gateway.Start
	progress chan gateway.Progress // mark echoes and clears, in order
}

func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, ws, err := gateway.Accept(w, r, nil, twilio.Codec{}, gateway.Options{})
	if err != nil {
		a.t.Error(err)
		return
	}
	defer ws.Close(websocket.StatusNormalClosure, "")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	defer func() { cancel(); <-runDone }()

	det, _ := vad.New(vad.Config{SampleRate: 8000, Hangover: 300 * time.Millisecond})
	var pcm []int16
	var evs []vad.Event
	speaking := "" // utterance being sent
	replied := false
	for {
		m, err := c.Read(ctx)
		var de *gateway.DecodeError
		if errors.As(err, &de) {
			a.t.Errorf("decode: %v", err)
			continue
		}
		if err != nil {
			return
		}
		switch {
		case m.Kind == gateway.KindStart:
			a.started <- m.Start
		case m.Kind == gateway.KindMedia:
			pcm = g711.DecodeMulaw(pcm[:0], m.Audio)
			evs = det.Process(evs[:0], pcm)
			for _, e := range evs {
				switch {
				case e.Kind == vad.SpeechEnd && !replied:
					replied = true
					speaking = "reply1"
					_ = c.SendPCM("reply1", tone(600*time.Millisecond), 8000)
					c.EndUtterance("reply1")
				case e.Kind == vad.SpeechStart && speaking == "reply2":
					ps, err := c.Clear(ctx)
					if err != nil {
						return
					}
					for _, p := range ps {
						a.progress <- p
					}
					speaking = ""
				}
			}
		case m.Progress != nil:
			a.progress <- *m.Progress
			if m.Progress.Utterance == "reply1" && m.Progress.Done {
				speaking = "reply2"
				_ = c.SendPCM("reply2", tone(3*time.Second), 8000)
				c.EndUtterance("reply2")
			}
		case m.Kind == gateway.KindStop:
			return
		}
	}
}

func TestCallWithBargeIn(t *testing.T) {
	a := &agent{t: t, started: make(chan *gateway.Start, 1), progress: make(chan gateway.Progress, 8)}
	srv := httptest.NewServer(a)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	g, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), Options{
		CustomParameters: map[string]string{"tenant": "acme", "caller": "+15550100"}, Speed: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if st := <-a.started; st.Params["tenant"] != "acme" || st.Format != media.Telephony {
		t.Fatalf("start = %+v", st)
	}

	// The caller speaks; the agent replies with 600 ms, whose mark comes back once played.
	if err := g.SendPCM(ctx, speech(t, "hello-8k.wav")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(ctx, func(s Snapshot) bool { return len(s.Echoed) == 1 }); err != nil {
		t.Fatal(err)
	}
	if p := <-a.progress; p.Utterance != "reply1" || !p.Done || p.Cleared || p.Played != 600*time.Millisecond {
		t.Fatalf("reply1 progress = %+v", p)
	}

	// reply2 (3 s) starts; after 400 ms of it the caller talks over it.
	if _, err := g.Wait(ctx, func(s Snapshot) bool { return s.Received >= time.Second }); err != nil {
		t.Fatal(err)
	}
	talkCtx, stopTalking := context.WithCancel(ctx)
	defer stopTalking()
	g.opts.Speed = 1
	talkDone := make(chan error, 1)
	go func() { talkDone <- g.SendPCM(talkCtx, speech(t, "stop-8k.wav")) }()
	snap, err := g.Wait(ctx, func(s Snapshot) bool { return hasEvent(s.Log, twilio.EventClear) })
	if err != nil {
		t.Fatal(err)
	}
	stopTalking()
	<-talkDone
	p := <-a.progress
	if p.Utterance != "reply2" || !p.Cleared || p.Played <= 0 || p.Played >= 3*time.Second {
		t.Fatalf("reply2 progress at clear = %+v", p)
	}
	// What frontdoor counts as sent of reply2 is what reached the gateway
	// before the clear (the clear follows every frame on the wire), and its
	// estimate of what was heard lies within it. How close that estimate is to
	// the gateway's own playback depends on two real-time clocks and the
	// delays between them, so it is not asserted here (tracker_test checks
	// the estimate on a manual clock).
	if sent := snap.Received - 600*time.Millisecond; p.Sent != sent {
		t.Errorf("frontdoor says it sent %v of reply2, the gateway got %v before the clear", p.Sent, sent)
	}
	if p.Played > p.Sent {
		t.Errorf("frontdoor says %v of reply2 was heard, more than the %v it sent", p.Played, p.Sent)
	}

	if err := g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(ctx, func(s Snapshot) bool { return false }); err == nil || ctx.Err() != nil {
		t.Fatalf("connection did not end after stop: %v", err)
	}
	// Nothing of the old generation arrived after the clear, up to the end.
	after := g.Snapshot().Log[indexOf(snap.Log, twilio.EventClear)+1:]
	for _, o := range after {
		if o.Event == twilio.EventMedia {
			t.Fatalf("media after clear: %d messages follow it", len(after))
		}
	}
}

func hasEvent(log []twilio.Outbound, ev string) bool { return indexOf(log, ev) >= 0 }

func indexOf(log []twilio.Outbound, ev string) int {
	for i, o := range log {
		if o.Event == ev {
			return i
		}
	}
	return -1
}

// TestPromptThenClose is the refused-call pattern: play a prompt, wait for
// its mark to confirm playback, then close the socket.
func TestPromptThenClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ws, err := gateway.Accept(w, r, nil, twilio.Codec{Dialect: twilio.Telnyx}, gateway.Options{})
		if err != nil {
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		runDone := make(chan error, 1)
		go func() { runDone <- c.Run(ctx) }()
		defer func() { cancel(); <-runDone }()
		for {
			m, err := c.Read(ctx)
			if err != nil {
				return
			}
			if m.Kind == gateway.KindStart {
				_ = c.SendPCM("prompt", tone(300*time.Millisecond), 8000)
				c.EndUtterance("prompt")
			}
			if m.Progress != nil && m.Progress.Done {
				ws.Close(websocket.StatusTryAgainLater, "busy")
				return
			}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), Options{Dialect: twilio.Telnyx})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Wait(ctx, func(Snapshot) bool { return false })
	if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("ended with %v, want close 1013", err)
	}
	if s.Received != 300*time.Millisecond || len(s.Echoed) != 1 {
		t.Fatalf("heard %v and echoed %v before the close", s.Received, s.Echoed)
	}
}
