package telephony

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/media/twilio/twiliotest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
)

// caller is one caller on one transport as run drives it: what it says
// and what it hears, in terms every transport shares, so that a scenario
// is written once and holds on each.
type caller interface {
	// say sends speech at 8 kHz, then silence (none: the caller is still
	// speaking when say returns).
	say(ctx context.Context, t *testing.T, speech []int16, silence time.Duration)
	// heard is the reply and prompt audio received so far.
	heard() time.Duration
	// ended reports whether the server has ended the call.
	ended() bool
	// hangup ends the call as the transport's caller does.
	hangup(ctx context.Context, t *testing.T)
}

// transport dials one caller of a kind on a rig.
type transport struct {
	name string // the transport's name, as it logs ("native" logs nothing)
	dial func(ctx context.Context, t *testing.T, r *rig, logs *logRecords) caller
}

// transports are the four kinds of call run runs each scenario over: the
// native protocol, Twilio Media Streams, one gateway dialect (Plivo) and
// SIP, each through its own handler on the engine of the rig.
var transports = []transport{
	{name: "native", dial: dialNative},
	{name: "twilio", dial: func(ctx context.Context, t *testing.T, r *rig, _ *logRecords) caller {
		return &twilioCaller{r.gateway(ctx, twiliotest.Options{Speed: 2})}
	}},
	{name: "plivo", dial: func(ctx context.Context, t *testing.T, r *rig, _ *logRecords) caller {
		return &gatewayCaller{g: r.gatewayFor(ctx, dialects[0], 2, nil), d: dialects[0]}
	}},
	{name: "sip", dial: func(ctx context.Context, t *testing.T, r *rig, logs *logRecords) caller {
		s := sipServer(t, r.Engine, sip.Config{}, SIPConfig{Logger: slog.New(logs)})
		return &sipRunCaller{dialSIP(ctx, t, s, "acme", sip.DialConfig{})}
	}},
}

// run runs scenario once per transport, each on a rig of its own built
// with setup (stub backends and a stub recognizer; the native writer paced
// in real time as a phone's is), logging into logs.
func run(t *testing.T, setup func(*session.Config, *stub.Settings), scenario func(t *testing.T, r *rig, tr transport, logs *logRecords)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			logs.dumpOnFailure(t)
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Recognizer = stub.NewRecognizer(stub.Settings{})
				c.Logger = slog.New(logs)
				c.Pace = true
				if setup != nil {
					setup(c, s)
				}
			})
			scenario(t, r, tr, logs)
		})
	}
}

// TestRunBargeIn, on every transport: the caller says hello and hears a
// paced reply; it speaks over it and, once the engine has counted the
// barge-in, not one more frame of the old reply reaches it while it goes
// on speaking; its next utterance gets a reply of its own; its hang-up
// ends the call and gives the session lease back.
func TestRunBargeIn(t *testing.T) {
	t.Parallel()
	run(t, func(_ *session.Config, s *stub.Settings) {
		s.Rate = 16000
		s.FrameCount = 150 // a 3 s reply
		s.Tokens = 12
	}, func(t *testing.T, r *rig, tr transport, logs *logRecords) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := tr.dial(ctx, t, r, logs)
		c.say(ctx, t, sessiontest.Speech(t, "hello-8k.wav", 8000), 600*time.Millisecond)
		waitHeard(ctx, t, c, "a second of the reply", func(d time.Duration) bool { return d >= time.Second })

		stop := sessiontest.Speech(t, "stop-8k.wav", 8000)
		half := len(stop) * 2 / 3
		c.say(ctx, t, stop[:half], 0)
		sessiontest.WaitFor(t, "the barge-in", func() bool { return r.Counter("frontdoor_barge_ins_total") == 1 })
		// Frames already on the wire when the engine rotated may still land.
		time.Sleep(100 * time.Millisecond)
		before := c.heard()
		c.say(ctx, t, stop[half:len(stop)-len(stop)/6], 0) // no trailing silence: still speaking
		if grew := c.heard() - before; grew != 0 {
			t.Fatalf("%v of the interrupted reply while the caller spoke over it", grew)
		}
		c.say(ctx, t, nil, 600*time.Millisecond)
		waitHeard(ctx, t, c, "the second reply", func(d time.Duration) bool { return d > before })

		c.hangup(ctx, t)
		sessiontest.WaitFor(t, "the session lease freed", func() bool {
			return r.stage(session.StageSession).Leased == 0 && r.Engine.Calls() == 0
		})
	})
}

// TestRunRefused, on every transport: with the session stage full, the
// caller waits its maximum, is told the truth (the expired prompt, as
// text on the native protocol, as audio on a phone) and the server ends
// the call; nothing stays held but the call that had the slot.
func TestRunRefused(t *testing.T) {
	t.Parallel()
	run(t, func(c *session.Config, s *stub.Settings) {
		c.Session.Slots, c.Session.Waiting, c.Session.MaxAge = 1, 1, 100*time.Millisecond
		s.FrameCount = 25
	}, func(t *testing.T, r *rig, tr transport, logs *logRecords) {
		holder := r.Admitted()
		defer holder.Send(map[string]any{"type": "hangup"})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := tr.dial(ctx, t, r, logs)
		sessiontest.WaitFor(t, "the server ending the refused call", c.ended)
		if n, ok := c.(*nativeCaller); ok {
			if got := n.reasons(); len(got) == 0 || got[len(got)-1] != "expired" {
				t.Fatalf("prompts %v, want the one that says the wait expired", got)
			}
		} else {
			if p := logs.find(tr.name + ": prompt"); len(p) == 0 || p[len(p)-1]["reason"] != "expired" {
				t.Fatalf("prompts %v, want the one that says the wait expired", p)
			}
			if h := c.heard(); h < 500*time.Millisecond {
				t.Fatalf("the refused caller heard %v of its prompt", h)
			}
		}
		v := r.stage(session.StageSession)
		if v.Ledger.Expired != 1 || v.Leased != 1 {
			t.Fatalf("session stage after the refusal: leased %d, ledger %+v", v.Leased, v.Ledger)
		}
	})
}

// waitHeard waits until what the caller heard satisfies ok.
func waitHeard(ctx context.Context, t *testing.T, c caller, what string, ok func(time.Duration) bool) {
	t.Helper()
	for !ok(c.heard()) {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: heard %v", what, c.heard())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// nativeCaller is a caller on /v1/session that says hello with 8 kHz
// PCM16 audio and keeps what it is sent.
type nativeCaller struct {
	c    *sessiontest.Client
	mu   sync.Mutex
	rate int           // of the audio announced last
	got  time.Duration // reply audio received
	why  []string      // the reasons of the prompts received
	err  error         // why the connection ended, once it has
	done chan struct{}
}

func dialNative(ctx context.Context, t *testing.T, r *rig, _ *logRecords) caller {
	n := &nativeCaller{c: r.Dial(), done: make(chan struct{})}
	n.c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 8000}})
	// It reads for as long as the scenario lasts (ctx), not the rig's
	// client's 10 s: a read whose context ends closes the connection, and
	// on a loaded machine a scenario may take longer.
	go n.read(ctx)
	t.Cleanup(func() {
		n.c.Conn.Close(websocket.StatusNormalClosure, "")
		<-n.done
	})
	return n
}

func (n *nativeCaller) read(ctx context.Context) {
	defer close(n.done)
	for {
		typ, b, err := n.c.Conn.Read(ctx)
		n.mu.Lock()
		switch {
		case err != nil:
			n.err = err
		case typ == websocket.MessageBinary && n.rate > 0:
			n.got += time.Duration(len(b)/2) * time.Second / time.Duration(n.rate)
		case typ == websocket.MessageText:
			var m sessiontest.Msg
			_ = json.Unmarshal(b, &m)
			switch m.Type {
			case "audio_start":
				n.rate = m.Rate
			case "prompt":
				n.why = append(n.why, m.Reason)
			}
		}
		n.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (n *nativeCaller) say(ctx context.Context, t *testing.T, speech []int16, silence time.Duration) {
	t.Helper()
	all := append(append([]int16(nil), speech...), make([]int16, int(silence.Seconds()*8000))...)
	for len(all) > 0 { // 20 ms frames at the pace of a phone
		k := min(160, len(all))
		if err := n.c.Conn.Write(ctx, websocket.MessageBinary, pcm.Encode(nil, all[:k])); err != nil {
			t.Fatal(err)
		}
		all = all[k:]
		time.Sleep(10 * time.Millisecond) // twice real time, as the phones' simulators send
	}
}

func (n *nativeCaller) heard() time.Duration { n.mu.Lock(); defer n.mu.Unlock(); return n.got }
func (n *nativeCaller) ended() bool          { n.mu.Lock(); defer n.mu.Unlock(); return n.err != nil }
func (n *nativeCaller) reasons() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.why...)
}

func (n *nativeCaller) hangup(context.Context, *testing.T) {
	n.c.Send(map[string]any{"type": "hangup"})
	<-n.done
}

// twilioCaller is a Twilio Media Streams gateway (twiliotest).
type twilioCaller struct{ g *twiliotest.Gateway }

func (c *twilioCaller) say(ctx context.Context, t *testing.T, speech []int16, silence time.Duration) {
	t.Helper()
	if err := c.g.SendPCM(ctx, speech); err != nil {
		t.Fatal(err)
	}
	if silence > 0 {
		if err := c.g.SendSilence(ctx, silence); err != nil {
			t.Fatal(err)
		}
	}
}
func (c *twilioCaller) heard() time.Duration { return c.g.Snapshot().Received }
func (c *twilioCaller) ended() bool          { return c.g.Snapshot().Err != nil }
func (c *twilioCaller) hangup(ctx context.Context, t *testing.T) {
	if err := c.g.SendStop(ctx); err != nil {
		t.Fatal(err)
	}
}

// gatewayCaller is a gateway of one dialect (gatewaytest).
type gatewayCaller struct {
	g *gatewaytest.Gateway
	d dialect
}

func (c *gatewayCaller) say(ctx context.Context, t *testing.T, speech []int16, silence time.Duration) {
	t.Helper()
	rate := c.g.Start().Format.SampleRate
	if rate != 8000 {
		t.Fatalf("%s streams at %d Hz; run's speech is 8 kHz", c.d.name, rate)
	}
	if err := c.g.SendPCM(ctx, append(append([]int16(nil), speech...), make([]int16, int(silence.Seconds()*8000))...)); err != nil {
		t.Fatal(err)
	}
}
func (c *gatewayCaller) heard() time.Duration { return c.g.Snapshot().Received }
func (c *gatewayCaller) ended() bool          { return c.g.Snapshot().Err != nil }
func (c *gatewayCaller) hangup(ctx context.Context, t *testing.T) {
	endCall(ctx, t, c.d, c.g)
}

// sipRunCaller is a SIP phone (sip.Dial); what it heard is its frames
// with speech energy, since RTP flows in silence too.
type sipRunCaller struct{ *sipCaller }

func (c *sipRunCaller) say(ctx context.Context, t *testing.T, speech []int16, silence time.Duration) {
	t.Helper()
	c.speak(ctx, t, speech, silence)
}

func (c *sipRunCaller) heard() time.Duration {
	_, loud := c.received()
	return time.Duration(loud) * 20 * time.Millisecond
}

func (c *sipRunCaller) ended() bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

func (c *sipRunCaller) hangup(ctx context.Context, t *testing.T) {
	if err := c.Hangup(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
