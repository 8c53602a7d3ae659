package sip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/g711"

	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

func constant(v int16, d time.Duration) []int16 {
	pcm := make([]int16, int(d/(time.Second/8000)))
	for i := range pcm {
		pcm[i] = v
	}
	return pcm
}

// TestDialBargeIn: Dial's client and the server exchange audio and a
// digit; the digit makes the server clear its queued reply (barge-in) and
// queue a second one: the client gets the first reply's start, then only
// the second, never a frame of the first after it; then the server hangs up.
func TestDialBargeIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		digit   rune
		voiced  int
		dropped time.Duration
		err     error
	}
	res := make(chan result, 1)
	s := listen(t, Config{Codecs: []Codec{PCMA, PCMU}, Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		var r result
		defer func() { res <- r }()
		m, err := c.Answer(ctx)
		if err != nil {
			r.err = err
			return
		}
		if err := m.WritePCM(constant(4000, 3*time.Second)); err != nil {
			r.err = err
			return
		}
		for r.digit == 0 {
			select {
			case f := <-m.Frames():
				if siptest.RMS(f.PCM) > 1000 {
					r.voiced++
				}
			case r.digit = <-m.Digits():
			case <-ctx.Done():
				r.err = ctx.Err()
				return
			}
		}
		r.dropped = m.Clear()
		if err := m.WritePCM(constant(-4000, 200*time.Millisecond)); err != nil {
			r.err = err
			return
		}
		if err := m.Drain(ctx); err != nil {
			r.err = err
			return
		}
		r.err = c.Hangup(ctx)
	})})
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{From: "load"})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if out.Codec() != PCMA {
		t.Errorf("codec %v, want the server's first choice PCMA", out.Codec())
	}
	if err := out.WritePCM(constant(8000, 400*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	first, second := g711.LinearToAlaw(4000), g711.LinearToAlaw(-4000)
	var nFirst, nSecond, stale int
	var last Frame
	var gaps []string
	digitSent := false
	for f := range out.Frames() {
		if nFirst+nSecond > 0 {
			if f.SSRC != last.SSRC || f.Seq != last.Seq+1 {
				gaps = append(gaps, fmt.Sprintf("seq %d->%d ssrc %x->%x", last.Seq, f.Seq, last.SSRC, f.SSRC))
			}
			if !f.Marker && f.Timestamp-last.Timestamp != frameSamples {
				gaps = append(gaps, fmt.Sprintf("ts %d->%d without a marker", last.Timestamp, f.Timestamp))
			}
		}
		last = f
		switch f.Payload[0] {
		case first:
			nFirst++
			if nSecond > 0 {
				stale++
			}
		case second:
			nSecond++
		}
		if nFirst == 25 && !digitSent {
			digitSent = true
			if err := out.SendDigit(ctx, '1', 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-out.Done()
	if !errors.Is(out.Err(), ErrRemoteHangup) {
		t.Errorf("client call ended with %v, want ErrRemoteHangup", out.Err())
	}
	r := <-res
	if r.err != nil || r.digit != '1' {
		t.Fatalf("server: digit %q, err %v", r.digit, r.err)
	}
	if r.voiced < 10 {
		t.Errorf("server got %d voiced frames of the client's 20", r.voiced)
	}
	if stale != 0 || nSecond != 10 || nFirst >= 150 || r.dropped < time.Second {
		t.Errorf("client got %d frames of the first reply (%d after the second began), %d of the second (want 10); server dropped %v",
			nFirst, stale, nSecond, r.dropped)
	}
	if len(gaps) > 0 {
		t.Errorf("RTP not continuous: %v", gaps)
	}
	t.Logf("first reply: %d frames before the barge-in, %v dropped; stats %+v", nFirst, r.dropped, out.Stats())
}

// TestDialRefusals: what Dial reports when the server refuses, and what
// the handler sees.
func TestDialRefusals(t *testing.T) {
	auth := &Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret", Tenant: "acme"},
		"bob": {Password: "bobpw", Tenant: "globex"}, "trunk": {Password: "trunkpw"}}}
	tenantIs := func(want string) func(context.Context, *Call) error {
		return func(ctx context.Context, c *Call) error {
			if c.Tenant != want {
				return fmt.Errorf("tenant %q, want %q", c.Tenant, want)
			}
			return c.Reject(603, "Decline")
		}
	}
	tests := []struct {
		name    string
		cfg     Config
		dial    DialConfig
		handler func(context.Context, *Call) error
		want    string // in Dial's error; "" for success
		callErr error  // the handler's call ends with it
	}{
		{"reject 486", Config{}, DialConfig{}, func(ctx context.Context, c *Call) error { return c.Reject(486, "Busy Here") }, "486", ErrRejected},
		{"handler returns", Config{}, DialConfig{}, func(ctx context.Context, c *Call) error { return nil }, "480", ErrRejected},
		{"no common codec", Config{Codecs: []Codec{PCMA}}, DialConfig{Codecs: []Codec{PCMU}},
			func(ctx context.Context, c *Call) error { _, err := c.Answer(ctx); return err }, "488", ErrNotAcceptable},
		{"digest, right password", Config{Auth: auth, Tenant: TenantFromUser}, DialConfig{Username: "alice", Password: "secret"},
			func(ctx context.Context, c *Call) error {
				if c.User != "alice" || c.Tenant != "acme" {
					return fmt.Errorf("user %q tenant %q", c.User, c.Tenant)
				}
				_, err := c.Answer(ctx)
				if err != nil {
					return err
				}
				if _, err := c.Answer(ctx); !errors.Is(err, ErrCallState) {
					return fmt.Errorf("a second Answer: %v", err)
				}
				if err := c.Reject(486, ""); !errors.Is(err, ErrCallState) {
					return fmt.Errorf("Reject after Answer: %v", err)
				}
				if err := c.Reject(200, ""); err == nil {
					return errors.New("Reject(200) accepted")
				}
				return c.Hangup(ctx)
			}, "", ErrHungUp},
		{"digest, wrong password", Config{Auth: auth}, DialConfig{Username: "alice", Password: "guess"}, nil, "403", nil},
		{"digest, no credentials", Config{Auth: auth}, DialConfig{}, nil, "401", nil},
		{"tenant header", Config{Auth: auth, Tenant: TenantFromHeader, TenantHeader: "X-Tenant"},
			DialConfig{Username: "alice", Password: "secret", Header: [][2]string{{"X-Tenant", "globex"}}},
			func(ctx context.Context, c *Call) error {
				if c.Tenant != "globex" {
					return fmt.Errorf("tenant %q", c.Tenant)
				}
				return c.Reject(603, "Decline")
			}, "603", ErrRejected},
		{"pinned user names its tenant", Config{Auth: auth, Tenant: TenantFromUserOrRequestURI},
			DialConfig{Username: "bob", Password: "bobpw"}, tenantIs("globex"), "603", ErrRejected},
		{"trunk user dials the tenant", Config{Auth: auth, Tenant: TenantFromUserOrRequestURI},
			DialConfig{Username: "trunk", Password: "trunkpw"}, tenantIs("acme"), "603", ErrRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			type outcome struct {
				err  error
				call *Call
			}
			seen := make(chan outcome, 1)
			cfg := tt.cfg
			cfg.Handler = HandlerFunc(func(ctx context.Context, c *Call) {
				if tt.handler == nil {
					seen <- outcome{err: errors.New("handler called")}
					return
				}
				err := tt.handler(ctx, c)
				if errors.Is(err, ErrNotAcceptable) {
					err = nil
				}
				seen <- outcome{err, c}
			})
			s := listen(t, cfg)
			out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), tt.dial)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				<-out.Done()
				out.Close()
			} else {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Dial: %v, want ErrRefused %s", err, tt.want)
				}
			}
			if tt.handler == nil {
				s.Close()
				select {
				case o := <-seen:
					t.Fatalf("handler saw a refused caller: %v", o.err)
				default:
				}
				return
			}
			o := <-seen
			if o.call == nil {
				t.Fatalf("handler: %v", o.err)
			}
			<-o.call.Done()
			if o.err != nil || !errors.Is(o.call.Err(), tt.callErr) {
				t.Errorf("handler: %v, call ended with %v, want %v", o.err, o.call.Err(), tt.callErr)
			}
		})
	}
}

// TestDialCancel: a caller that gives up while the call rings sends CANCEL,
// and the handler's call ends with ErrCanceled.
func TestDialCancel(t *testing.T) {
	ringing := make(chan struct{})
	ended := make(chan error, 1)
	s := listen(t, Config{Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		if err := c.Ringing(); err != nil {
			ended <- err
			return
		}
		close(ringing)
		<-ctx.Done()
		ended <- c.Err()
	})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
		if err == nil {
			out.Close()
		}
		errc <- err
	}()
	<-ringing
	cancel()
	if err := <-ended; !errors.Is(err, ErrCanceled) {
		t.Errorf("call ended with %v, want ErrCanceled", err)
	}
	if err := <-errc; err == nil {
		t.Error("Dial succeeded after its cancel")
	}
}

// TestDialNoAnswer: a Dial to a server that answers nothing (not even 100
// Trying, so no CANCEL may be sent) gives up when its ctx ends, not when
// the INVITE transaction times out 32 s later.
func TestDialNoAnswer(t *testing.T) {
	mute, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", mute.LocalAddr()), DialConfig{})
	if err == nil {
		out.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial: %v, want the ctx's deadline", err)
	}
}
