package sip

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

// speech is the caller's audio baresip sends: espeak-ng saying "hello"
// (media/testdata/gen-speech.sh).
var speech, _ = filepath.Abs("../testdata/hello-8k.wav")

func tone(freq float64, d time.Duration) []int16 {
	n := int(d / (time.Second / 8000))
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*freq*float64(i)/8000))
	}
	return pcm
}

// heard is what a handler saw of a call.
type heard struct {
	call    *Call
	voiced  int // received 20 ms frames with speech energy
	frames  int
	digits  []rune
	err     error
	sendErr error
	stats   MediaStats
}

func listen(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Listen(context.Background(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBaresipCall: a real phone dials on UDP and on TCP, the handler
// answers and plays a tone, gets the caller's speech and a DTMF 1, and the
// call ends when the phone hangs up; the phone recorded the tone.
func TestBaresipCall(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := make(chan heard, 1)
			started := make(chan *Call, 1)
			s := listen(t, Config{Handler: HandlerFunc(func(ctx context.Context, c *Call) {
				started <- c
				h := heard{call: c}
				defer func() { got <- h }()
				m, err := c.Answer(ctx)
				if err != nil {
					h.err = err
					return
				}
				h.sendErr = m.WritePCM(tone(600, time.Second))
				frames, digits := m.Frames(), m.Digits()
				for frames != nil || digits != nil {
					select {
					case f, ok := <-frames:
						if !ok {
							frames = nil
							continue
						}
						h.frames++
						if siptest.RMS(f.PCM) > 300 {
							h.voiced++
						}
					case d, ok := <-digits:
						if !ok {
							digits = nil
							continue
						}
						h.digits = append(h.digits, d)
					}
				}
				<-c.Done()
				h.err, h.stats = c.Err(), m.Stats()
			})})
			phone := siptest.Start(t, siptest.Options{Source: speech})
			uri := fmt.Sprintf("sip:acme@%s", s.Addr())
			if transport == "tcp" {
				uri += ";transport=tcp"
			}
			phone.Command(ctx, "dial", uri)
			phone.WaitEvent(ctx, "CALL_ESTABLISHED")
			c := <-started
			if c.Tenant != "acme" || c.From.User != "alice" || c.Transport != map[string]string{"udp": "UDP", "tcp": "TCP"}[transport] || c.CallID == "" {
				t.Errorf("call: tenant %q from %q transport %q call-id %q", c.Tenant, c.From.User, c.Transport, c.CallID)
			}
			// The tone takes 1 s; the speech is 4 s long: press 1 within it.
			time.Sleep(1500 * time.Millisecond)
			phone.Command(ctx, "sndcode", "1")
			time.Sleep(500 * time.Millisecond)
			phone.Command(ctx, "hangup", "")
			phone.WaitEvent(ctx, "CALL_CLOSED")
			var h heard
			select {
			case h = <-got:
			case <-ctx.Done():
				t.Fatal("the handler's call did not end after the phone hung up")
			}
			if !errors.Is(h.err, ErrRemoteHangup) || h.sendErr != nil {
				t.Errorf("call ended with %v (send %v), want ErrRemoteHangup", h.err, h.sendErr)
			}
			if string(h.digits) != "1" {
				t.Errorf("digits %q, want \"1\"", string(h.digits))
			}
			if h.voiced < 10 {
				t.Errorf("%d of %d received frames carry speech, want 10 or more", h.voiced, h.frames)
			}
			if h.stats.AudioOut != time.Second {
				t.Errorf("sent %v of audio, want the 1 s written", h.stats.AudioOut)
			}
			t.Logf("received %d frames (%d voiced), sent %d packets; pacing lateness p50 %v p99 %v max %v",
				h.frames, h.voiced, h.stats.PacketsOut, h.stats.Pace.P50, h.stats.Pace.P99, h.stats.Pace.Max)
			rec := phone.Recording(ctx)
			loud := siptest.Loud(rec.Samples, 2000)
			if loud < 500*time.Millisecond {
				t.Errorf("the phone recorded %v of tone (RMS over 2000), want 500ms or more of the 1 s sent", loud)
			}
			t.Logf("the phone recorded %v, %v of it tone", rec.Duration(), loud)
		})
	}
}

// TestBaresipPromptThenHangup is what frontdoor does with a caller refused
// at the session stage: answer, play the prompt to its end, hang up (BYE).
// The phone hears the prompt and sees the call closed by the far end.
func TestBaresipPromptThenHangup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	s := listen(t, Config{Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		m, err := c.Answer(ctx)
		if err == nil {
			err = m.WritePCM(tone(450, 800*time.Millisecond))
		}
		if err == nil {
			err = m.Drain(ctx)
		}
		if err == nil {
			err = c.Hangup(ctx)
		}
		if err == nil && !errors.Is(c.Err(), ErrHungUp) {
			err = fmt.Errorf("call ended with %v, want ErrHungUp", c.Err())
		}
		done <- err
	})})
	phone := siptest.Start(t, siptest.Options{Source: speech})
	phone.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", s.Addr()))
	phone.WaitEvent(ctx, "CALL_ESTABLISHED")
	closed := phone.WaitEvent(ctx, "CALL_CLOSED")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec := phone.Recording(ctx)
	if loud := siptest.Loud(rec.Samples, 2000); loud < 400*time.Millisecond {
		t.Errorf("the phone heard %v of the 800 ms prompt before the BYE", loud)
	}
	t.Logf("phone: %v (%v)", closed["param"], rec.Duration())
}

// TestBaresipDigest: with Auth configured the phone is challenged (401);
// the right password gets the call through with its user and tenant, a
// wrong one or an unknown user fails (403) without the handler seeing it.
func TestBaresipDigest(t *testing.T) {
	auth := &Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret", Tenant: "acme"}}}
	tests := []struct {
		name, user, password string
		ok                   bool
	}{
		{"right password", "alice", "secret", true},
		{"wrong password", "alice", "guess", false},
		{"unknown user", "mallory", "secret", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			calls := make(chan *Call, 1)
			s := listen(t, Config{Auth: auth, Tenant: TenantFromUser, Handler: HandlerFunc(func(ctx context.Context, c *Call) {
				calls <- c
				if _, err := c.Answer(ctx); err != nil {
					return
				}
				<-ctx.Done()
			})})
			phone := siptest.Start(t, siptest.Options{User: tt.user, Password: tt.password, Source: speech})
			phone.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", s.Addr()))
			if tt.ok {
				phone.WaitEvent(ctx, "CALL_ESTABLISHED")
				c := <-calls
				if c.User != "alice" || c.Tenant != "acme" {
					t.Errorf("call of user %q, tenant %q", c.User, c.Tenant)
				}
				phone.Command(ctx, "hangup", "")
				<-c.Done()
				return
			}
			closed := phone.WaitEvent(ctx, "CALL_CLOSED")
			if p := fmt.Sprint(closed["param"]); !strings.Contains(p, "403") {
				t.Errorf("call closed with %q, want 403", p)
			}
			select {
			case c := <-calls:
				t.Errorf("the handler saw the call of %q", c.From.User)
			default:
			}
		})
	}
}

// TestBaresipCancel: the phone hangs up while the call rings (CANCEL) and
// the handler's pending call ends with ErrCanceled.
func TestBaresipCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ringing := make(chan *Call, 1)
	s := listen(t, Config{Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		if err := c.Ringing(); err == nil {
			ringing <- c
		}
		<-ctx.Done()
	})})
	phone := siptest.Start(t, siptest.Options{Source: speech})
	phone.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", s.Addr()))
	var c *Call
	select {
	case c = <-ringing:
	case <-ctx.Done():
		t.Fatal("no call")
	}
	phone.WaitEvent(ctx, "CALL_RINGING")
	phone.Command(ctx, "hangup", "")
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the pending call did not end on CANCEL")
	}
	if !errors.Is(c.Err(), ErrCanceled) {
		t.Errorf("call ended with %v, want ErrCanceled", c.Err())
	}
	phone.WaitEvent(ctx, "CALL_CLOSED")
}
