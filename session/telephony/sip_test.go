package telephony

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
	"github.com/pion/rtp"
)

// sipServer serves e's calls over SIP on a loopback port, with cfg's auth
// and tenant source, until the test ends (before the rig closes).
func sipServer(t *testing.T, e *session.Engine, cfg sip.Config, hc SIPConfig) *sip.Server {
	t.Helper()
	cfg.Handler = NewSIPHandler(e, hc)
	s, err := sip.Listen(context.Background(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sipCaller is a synthetic caller (sip.Dial) that keeps what it receives:
// every frame's arrival and its energy.
type sipCaller struct {
	*sip.Outgoing
	mu     sync.Mutex
	frames int // frames received
	loud   int // of them with speech energy
	done   chan struct{}
}

func dialSIP(ctx context.Context, t *testing.T, s *sip.Server, user string, dc sip.DialConfig) *sipCaller {
	t.Helper()
	out, err := sip.Dial(ctx, fmt.Sprintf("sip:%s@%s", user, s.Addr()), dc)
	if err != nil {
		t.Fatal(err)
	}
	c := &sipCaller{Outgoing: out, done: make(chan struct{})}
	t.Cleanup(func() {
		out.Close()
		<-c.done
	})
	go func() {
		defer close(c.done)
		for f := range out.Frames() {
			c.mu.Lock()
			c.frames++
			if siptest.RMS(f.PCM) > 300 {
				c.loud++
			}
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *sipCaller) received() (frames, loud int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.loud
}

// speak sends pcm and then silence, at the pace of a phone (the pacer's).
func (c *sipCaller) speak(ctx context.Context, t *testing.T, pcm []int16, silence time.Duration) {
	t.Helper()
	if err := c.WritePCM(append(pcm, make([]int16, int(silence/(time.Second/8000)))...)); err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSIPCall: a SIP caller (PCMU, then PCMA) says hello and hears the
// reply, paced as RTP; it speaks over the reply, which stops at once
// (nothing of it arrives while the caller goes on speaking) with what the
// caller heard reported; its BYE ends the call and frees the session
// lease. The call runs under the request URI's tenant.
func TestSIPCall(t *testing.T) {
	t.Parallel()
	for _, codec := range []sip.Codec{sip.PCMU, sip.PCMA} {
		t.Run(codec.Name, func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Recognizer = stub.NewRecognizer(stub.Settings{})
				c.Logger = slog.New(logs)
				s.Rate = 16000
				s.FrameCount = 150 // a 3 s reply
				s.Tokens = 12
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := sipServer(t, r.Engine, sip.Config{}, SIPConfig{Logger: slog.New(logs)})
			c := dialSIP(ctx, t, s, "acme", sip.DialConfig{Codecs: []sip.Codec{codec}})
			if c.Codec() != codec {
				t.Fatalf("codec %v, want %v", c.Codec(), codec)
			}
			sessiontest.WaitFor(t, "the call admitted", func() bool { return r.stage("session").Leased == 1 })

			c.speak(ctx, t, sessiontest.Speech(t, "hello-8k.wav", 8000), 600*time.Millisecond)
			deadline := time.Now().Add(10 * time.Second)
			for _, loud := c.received(); loud < 50; _, loud = c.received() { // a second of the reply
				if time.Now().After(deadline) {
					t.Fatalf("no reply heard: %d frames (%d loud)", c.frames, c.loud)
				}
				time.Sleep(10 * time.Millisecond)
			}

			// Barge in: two thirds of "stop" starts an utterance that is
			// still going on once the reply was cleared.
			stop := sessiontest.Speech(t, "stop-8k.wav", 8000)
			half := len(stop) * 2 / 3
			if err := c.WritePCM(stop[:half]); err != nil {
				t.Fatal(err)
			}
			sessiontest.WaitFor(t, "the barge-in", func() bool { return len(logs.find("sip: interrupted")) > 0 })
			time.Sleep(100 * time.Millisecond) // packets on their way before the clear
			before, _ := c.received()
			if err := c.WritePCM(stop[half : len(stop)-5600]); err != nil { // no trailing silence: still speaking
				t.Fatal(err)
			}
			if err := c.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if after, _ := c.received(); after != before {
				t.Errorf("%d frames of the cleared reply arrived while the caller spoke", after-before)
			}
			in := logs.find("sip: interrupted")[0]
			if h, ok := in["heard_ms"].(int64); !ok || h <= 0 || h >= 3000 {
				t.Errorf("heard %v ms of the 3 s reply, want a part of it", in["heard_ms"])
			}

			if err := c.Hangup(ctx); err != nil {
				t.Fatal(err)
			}
			sessiontest.WaitFor(t, "the lease released", func() bool { return r.stage("session").Leased == 0 && r.Engine.Calls() == 0 })
			ans := logs.find("sip: call answered")
			if len(ans) != 1 || ans[0]["tenant"] != "acme" || ans[0]["codec"] != codec.Name {
				t.Errorf("answered: %v", ans)
			}
		})
	}
}

// TestSIPRefusedCallback: with the session stage full, a SIP caller is
// answered, hears the refusal prompt and the keypad menu (a callback only:
// no handoff, which would need a transfer), presses 1 by RFC 4733 and is booked a callback to its own number (the From user), hears
// the outcome and is hung up (BYE); a caller that hangs up while it waits
// (before the stage decides) leaves nothing held.
func TestSIPRefusedCallback(t *testing.T) {
	t.Parallel()
	k := newKeypad(t, keypadOptions{window: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := sipServer(t, k.Engine, sip.Config{}, SIPConfig{Logger: slog.New(k.logs), KeyWait: k.keyWait})
	c := dialSIP(ctx, t, s, "acme", sip.DialConfig{From: "+15550100"})
	sessiontest.WaitFor(t, "the keypad menu", func() bool { return len(k.logs.find("sip: keypad menu")) > 0 })
	if m := k.logs.find("sip: keypad menu")[0]; m["callback"] != true || m["handoff"] != false {
		t.Errorf("menu %v: want a callback alone (a SIP call cannot be transferred to a person)", m)
	}
	if err := c.SendDigit(ctx, '1', 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatalf("the refused call was not hung up (said %v)", k.saidSIP())
	}
	if !errors.Is(c.Err(), sip.ErrRemoteHangup) {
		t.Errorf("call ended with %v, want the server's BYE", c.Err())
	}
	cbs, err := k.svc.ListCallbacks(ctx, 0)
	if err != nil || len(cbs) != 1 || cbs[0].Number != "+15550100" {
		t.Fatalf("callbacks %+v (%v), want one to +15550100", cbs, err)
	}
	if out := k.logs.find("sip: keypad outcome"); len(out) != 1 || out[0]["disposition"] != stages.Queued {
		t.Errorf("keypad outcome %v", out)
	}
	if _, loud := c.received(); loud < 10 {
		t.Errorf("the caller heard %d loud frames, want the prompt and the menu", loud)
	}
	if v := k.stage("session"); v.Leased != 1 || v.Queued != 0 { // the native holder alone
		t.Errorf("session stage %+v after the refused call", v)
	}
	if k.Engine.Calls() != 1 {
		sessiontest.WaitFor(t, "the refused call gone", func() bool { return k.Engine.Calls() == 1 })
	}
}

// saidSIP lists the utterances the keypad code spoke on SIP calls.
func (k *keypad) saidSIP() []string {
	var out []string
	for _, r := range k.logs.find("sip: say") {
		out = append(out, r["utterance"].(string))
	}
	return out
}

// TestSIPMediaTimeout: a caller gone without a BYE (its RTP stopped) is
// hung up once the media timeout has elapsed since its last RTP packet (or
// the answer), on the engine's clock, not a millisecond before nor after,
// and its lease released. RTP from another port of the caller's host is
// not the caller's: it keeps no call alive.
func TestSIPMediaTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 30 * time.Second
	tests := []struct {
		name    string
		speakAt time.Duration // the caller speaks then (0: never)
		foreign bool          // and RTP from another port then
		hangAt  time.Duration // the hang-up is due then, from the answer
	}{
		{"silent from the answer", 0, false, timeout},
		{"silent after speaking", 10 * time.Second, false, 10*time.Second + timeout},
		{"only foreign RTP", 10 * time.Second, true, timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := stagestest.NewClock(stagestest.Epoch)
			r := newRig(t, func(c *session.Config, _ *stub.Settings) {
				c.Clock = clock
				// The clock jumps tens of seconds here, and the writer's
				// watchdog reads it too: a write still in flight as it jumps
				// (the session's `admitted`, on a loaded machine) would count
				// as stalled that long and end the call as a slow reader.
				c.Outbound.Timeout = time.Hour
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			calls := make(chan *sip.Call, 1)
			h := NewSIPHandler(r.Engine, SIPConfig{MediaTimeout: timeout})
			s, err := sip.Listen(ctx, "127.0.0.1:0", sip.Config{Clock: clock, Handler: sip.HandlerFunc(func(ctx context.Context, c *sip.Call) {
				calls <- c
				h.ServeSIP(ctx, c)
			})})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			c := dialSIP(ctx, t, s, "acme", sip.DialConfig{})
			sc := <-calls
			// The line's timer is armed at the answer, before the call is admitted.
			sessiontest.WaitFor(t, "the call admitted", func() bool { return r.stage("session").Leased == 1 })
			if tt.speakAt > 0 {
				clock.Advance(tt.speakAt)
				if tt.foreign {
					sendForeignRTP(t, sc.Media().LocalAddr(), 10)
					sessiontest.WaitFor(t, "the foreign RTP dropped", func() bool { return sc.Media().Stats().Foreign >= 10 })
				} else {
					c.speak(ctx, t, make([]int16, 1600), 0)
					sessiontest.WaitFor(t, "the RTP received", func() bool { return sc.Media().Stats().PacketsIn >= 10 })
				}
			}
			// Dial's caller sends RTP only when written to: it is silent now.
			clock.Advance(tt.hangAt - tt.speakAt - time.Millisecond)
			// Whether a hang-up was missed is read from what the call did after
			// the reader had every chance to see a fired timer: the lease is held
			// and the call goes on (the server's reaction to a timer is quick; a
			// timer that fired early would end the call well within this wait).
			select {
			case <-c.Done():
				t.Fatalf("hung up %v before the media timeout: %v", time.Millisecond, c.Err())
			case <-time.After(200 * time.Millisecond):
			}
			clock.Advance(time.Millisecond)
			select {
			case <-c.Done():
			case <-ctx.Done():
				t.Fatal("a caller without RTP was not hung up at the media timeout")
			}
			if !errors.Is(c.Err(), sip.ErrRemoteHangup) {
				t.Errorf("call ended with %v, want the server's BYE", c.Err())
			}
			sessiontest.WaitFor(t, "the lease released", func() bool { return r.stage("session").Leased == 0 && r.Engine.Calls() == 0 })
		})
	}
}

// sendForeignRTP sends n PCMU packets to dst from a socket of its own on
// 127.0.0.1: the caller's host, not its port.
func sendForeignRTP(t *testing.T, dst netip.AddrPort, n int) {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: uint16(i), Timestamp: uint32(160 * i), SSRC: 7},
			Payload: make([]byte, 160)}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(b, dst); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSIPTenant: with digest authentication, a user pinned to a tenant
// calls as that tenant whatever the request URI says, and a trunk user
// names it in the request URI; the caller's number is its From user.
func TestSIPTenant(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	r := newRig(t, func(c *session.Config, _ *stub.Settings) { c.Logger = slog.New(logs) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	auth := &sip.Auth{Realm: "frontdoor", Users: map[string]sip.User{
		"bob": {Password: "bobpw", Tenant: "globex"}, "trunk": {Password: "trunkpw"}}}
	s := sipServer(t, r.Engine, sip.Config{Auth: auth, Tenant: sip.TenantFromUserOrRequestURI}, SIPConfig{Logger: slog.New(logs)})
	for i, tc := range []struct{ user, password, want string }{
		{"bob", "bobpw", "globex"},
		{"trunk", "trunkpw", "acme"},
	} {
		c := dialSIP(ctx, t, s, "acme", sip.DialConfig{Username: tc.user, Password: tc.password})
		sessiontest.WaitFor(t, "the call answered", func() bool { return len(logs.find("sip: call answered")) == i+1 })
		if got := logs.find("sip: call answered")[i]; got["tenant"] != tc.want || got["user"] != tc.user {
			t.Errorf("%s: answered %v, want tenant %s", tc.user, got, tc.want)
		}
		if err := c.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
		sessiontest.WaitFor(t, "the call ended", func() bool { return r.Engine.Calls() == 0 && r.stage("session").Leased == 0 })
	}
	if _, err := sip.Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), sip.DialConfig{Username: "bob", Password: "guess"}); !errors.Is(err, sip.ErrRefused) {
		t.Errorf("a wrong password: %v, want refused (403)", err)
	}
	if n := r.stage("session").Ledger.Offered; n != 2 {
		t.Errorf("the session stage was offered %d calls, want the 2 authenticated", n)
	}
}

// TestSIPAdmit: SIPConfig.Admit sees the call's tenant before the answer.
// Admitted, the call runs under the Caller it returns (here one whose turns
// are refused, so the caller's first turn ends the call) and its done runs
// once after the call; refused, the INVITE gets 486, or the status of a
// SIPRefusal, and nothing is answered.
func TestSIPAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		refuse error
		status string // in Dial's error; "" for an answered call
	}{
		{"admitted", nil, ""},
		{"tenant over its cap", errors.New("tenant acme at its cap"), "486"},
		{"refusal with a status", &SIPRefusal{Code: 503, Reason: "Service Unavailable"}, "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, func(c *session.Config, _ *stub.Settings) { c.Recognizer = stub.NewRecognizer(stub.Settings{}) })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var mu sync.Mutex
			var tenants []string
			done := 0
			admit := func(ctx context.Context) (context.Context, func(), error) {
				mu.Lock()
				defer mu.Unlock()
				tenants = append(tenants, tenant.CallerFrom(ctx).Tenant)
				if tt.refuse != nil {
					return nil, nil, tt.refuse
				}
				caller := tenant.CallerFrom(ctx)
				caller.AllowTurn = func() bool { return false }
				return tenant.WithCaller(ctx, caller), func() {
					mu.Lock()
					done++
					mu.Unlock()
				}, nil
			}
			s := sipServer(t, r.Engine, sip.Config{}, SIPConfig{Admit: admit})
			out, err := sip.Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), sip.DialConfig{})
			if tt.status != "" {
				if !errors.Is(err, sip.ErrRefused) || !strings.Contains(err.Error(), tt.status) {
					t.Fatalf("dial: %v, want refused %s", err, tt.status)
				}
				if n := r.Engine.Calls(); n != 0 {
					t.Errorf("%d calls on the engine after a refusal", n)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
				sessiontest.WaitFor(t, "the call admitted", func() bool { return r.stage("session").Leased == 1 })
				if err := out.WritePCM(append(sessiontest.Speech(t, "hello-8k.wav", 8000), make([]int16, 4800)...)); err != nil {
					t.Fatal(err)
				}
				select {
				case <-out.Done(): // the turn refused by the Caller's AllowTurn ended the call
				case <-ctx.Done():
					t.Fatal("the call outlived a turn its Caller refused")
				}
				sessiontest.WaitFor(t, "the call ended", func() bool { return r.Engine.Calls() == 0 })
			}
			s.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(tenants) != 1 || tenants[0] != "acme" {
				t.Errorf("Admit saw tenants %q, want [acme]", tenants)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.refuse == nil]; done != want {
				t.Errorf("done ran %d times, want %d", done, want)
			}
		})
	}
}
