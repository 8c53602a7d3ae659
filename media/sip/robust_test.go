package sip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

// answering is a handler that answers, reports the call and waits for its end.
func answering(calls chan<- *Call) Handler {
	return HandlerFunc(func(ctx context.Context, c *Call) {
		if _, err := c.Answer(ctx); err != nil {
			return
		}
		calls <- c
		<-ctx.Done()
	})
}

// TestBadSignalling: garbage on the SIP port, over UDP and TCP, and a TCP
// message over the parser's 64 KiB bound, leave the server serving calls.
func TestBadSignalling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := make(chan *Call, 1)
	s := listen(t, Config{Handler: answering(calls)})
	u, err := net.Dial("udp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, p := range [][]byte{
		[]byte("hello"),
		[]byte("INVITE sip:x SIP/2.0\r\n\r\n"),
		[]byte("INVITE sip:acme@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:1;branch=z9hG4bKx\r\nContent-Length: 99999\r\n\r\nv=0"),
		bytes.Repeat([]byte{0xff}, 1400),
	} {
		if _, err := u.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := "INVITE sip:acme@127.0.0.1 SIP/2.0\r\nX-Pad: " + strings.Repeat("a", 70<<10)
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte(big)) // the server may close the connection midway

	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
	if err != nil {
		t.Fatalf("a call after the garbage: %v", err)
	}
	defer out.Close()
	call := <-calls
	if err := out.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	<-call.Done()
	if !errors.Is(call.Err(), ErrRemoteHangup) {
		t.Errorf("call ended with %v", call.Err())
	}
}

// TestBadRTP: malformed datagrams on a call's RTP port are counted and
// ignored; the call's audio and digits still come through.
func TestBadRTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := make(chan *Call, 1)
	s := listen(t, Config{Handler: answering(calls)})
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Hangup(ctx)
	call := <-calls
	m := call.Media()
	// From the caller's own RTP socket: the call's source, so what is
	// wrong is what is sent, not where it comes from.
	g := out.Media.conn
	pkt := func(pt uint8, version uint8, payload []byte) []byte {
		p := rtp.Packet{Header: rtp.Header{Version: version, PayloadType: pt, SequenceNumber: 9, SSRC: 1}, Payload: payload}
		b, _ := p.Marshal()
		return b
	}
	bad := [][]byte{
		{},
		{0x80},
		[]byte("not rtp at all"),
		pkt(0, 1, make([]byte, 160)), // RTP version 1
		pkt(101, 2, []byte{1}),       // a truncated telephone-event
		pkt(13, 2, []byte{0x40}),     // comfort noise
		append(pkt(0, 2, nil), make([]byte, 2000)...), // over the 1500-byte bound
	}
	for _, b := range bad {
		if _, err := g.WriteToUDPAddrPort(b, m.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	// A good frame and a digit after the bad ones, from the caller itself.
	if err := out.WritePCM(constant(6000, 20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := out.SendDigit(ctx, '#', 0); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-m.Frames():
		if siptest.RMS(f.PCM) < 5000 {
			t.Errorf("frame RMS %.0f, want the 6000 sent", siptest.RMS(f.PCM))
		}
	case <-ctx.Done():
		t.Fatal("no frame")
	}
	select {
	case d := <-m.Digits():
		if d != '#' {
			t.Errorf("digit %q, want #", d)
		}
	case <-ctx.Done():
		t.Fatal("no digit")
	}
	if st := m.Stats(); st.Ignored != uint64(len(bad)) || st.Foreign != 0 || st.Digits != 1 {
		t.Errorf("stats %+v, want %d ignored, none foreign and 1 digit", st, len(bad))
	}
}

// TestServerClose: closing the server ends its calls (ErrServerClosed),
// hangs up the answered one (the client gets a BYE) and refuses new ones.
func TestServerClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := make(chan *Call, 1)
	s, err := Listen(ctx, "127.0.0.1:0", Config{Handler: answering(calls)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s;transport=tcp", s.Addr()), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	call := <-calls
	if call.Transport != "TCP" {
		t.Errorf("transport %q, want TCP", call.Transport)
	}
	s.Close()
	if !errors.Is(call.Err(), ErrServerClosed) {
		t.Errorf("call ended with %v, want ErrServerClosed", call.Err())
	}
	select {
	case <-out.Done():
	case <-ctx.Done():
		t.Fatal("the client got no BYE")
	}
	if !errors.Is(out.Err(), ErrRemoteHangup) {
		t.Errorf("client call ended with %v, want ErrRemoteHangup", out.Err())
	}
}

// TestMaxCalls: an INVITE over Config.MaxCalls gets 503 before any Handler.
func TestMaxCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := make(chan *Call, 2)
	s := listen(t, Config{MaxCalls: 1, Handler: answering(calls)})
	first, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	<-calls
	_, err = Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "503") {
		t.Errorf("second call: %v, want ErrRefused 503", err)
	}
	if err := first.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestListenConfig(t *testing.T) {
	h := HandlerFunc(func(context.Context, *Call) {})
	for _, tt := range []struct {
		name string
		addr string
		cfg  Config
	}{
		{"no handler", "127.0.0.1:0", Config{}},
		{"bad address", "localhost", Config{Handler: h}},
		{"unspecified without MediaIP", "0.0.0.0:0", Config{Handler: h}},
		{"tenant from user without auth", "127.0.0.1:0", Config{Handler: h, Tenant: TenantFromUser}},
		{"tenant header unnamed", "127.0.0.1:0", Config{Handler: h, Tenant: TenantFromHeader, Auth: &Auth{Realm: "r"}}},
		{"auth without realm", "127.0.0.1:0", Config{Handler: h, Auth: &Auth{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Listen(context.Background(), tt.addr, tt.cfg)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("Listen: %v, want ErrConfig", err)
			}
		})
	}
}

// TestListenContext: the end of Listen's ctx closes the server like Close.
func TestListenContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan *Call, 1)
	s, err := Listen(ctx, "127.0.0.1:0", Config{Handler: answering(calls)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	call := <-calls
	cancel()
	<-call.Done()
	<-out.Done()
	s.Close() // waits for the close ctx started
	if !errors.Is(call.Err(), ErrServerClosed) || !errors.Is(out.Err(), ErrRemoteHangup) {
		t.Errorf("server call %v, client call %v", call.Err(), out.Err())
	}
}
