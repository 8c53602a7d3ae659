package sip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icholy/digest"
	"github.com/pion/rtp"

	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

// offer is an SDP offer of PCMU to RTP at addr.
func offer(addr string) []byte { return siptest.Offer(netip.MustParseAddrPort(addr)) }

// TestTrunkAnswers: what a trunk relies on. A 200 OK and an OPTIONS answer
// carry Allow and Supported; while Busy says so (a drain), an INVITE and
// an OPTIONS are answered 503 with Retry-After and no Handler runs.
func TestTrunkAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var busy atomic.Bool
	var handled atomic.Int32
	s := listen(t, Config{RetryAfter: 7 * time.Second, Busy: busy.Load, Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		handled.Add(1)
		_ = c.Reject(486, "Busy Here")
	})})
	u := siptest.NewRawUA(t, "127.0.0.1", s.Addr())
	tests := []struct {
		name   string
		busy   bool
		method string
		status int
		want   map[string]string // headers and their values
	}{
		{"options", false, "OPTIONS", 200, map[string]string{"Allow": allowed, "Supported": ""}},
		{"invite", false, "INVITE", 486, nil},
		{"options while busy", true, "OPTIONS", 503, map[string]string{"Retry-After": "7"}},
		{"invite while busy", true, "INVITE", 503, map[string]string{"Retry-After": "7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy.Store(tt.busy)
			before := handled.Load()
			var body []byte
			if tt.method == "INVITE" {
				body = offer("127.0.0.1:40000")
			}
			res := u.Final(u.Send(tt.method, "", body))
			if res.StatusCode != tt.status {
				t.Fatalf("%s answered %d, want %d", tt.method, res.StatusCode, tt.status)
			}
			for name, v := range tt.want {
				if h := res.GetHeader(name); h == nil || h.Value() != v {
					t.Errorf("%s: %v, want %q", name, h, v)
				}
			}
			if tt.status == 503 && handled.Load() != before {
				t.Error("a Handler ran for a refused INVITE")
			}
		})
	}
	if st := s.Stats(); st.RefusedBusy != 2 {
		t.Errorf("RefusedBusy %d, want 2", st.RefusedBusy)
	}

	// The 200 OK of an answered call, as Dial receives it.
	calls := make(chan *Call, 1)
	s2 := listen(t, Config{Handler: answering(calls)})
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s2.Addr()), DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	<-calls
	res := out.dialog.InviteResponse
	if res.StatusCode != 200 || siptest.Header(res, "Allow") != allowed || res.GetHeader("Supported") == nil {
		t.Errorf("200 OK without Allow and Supported:\n%s", res)
	}
	if err := out.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDigestReplayed: one Authorization that a call was let in with,
// captured and sent again with new INVITEs, is refused every time (401
// with a fresh, stale challenge) and counted; a fresh answer is taken.
func TestDigestReplayed(t *testing.T) {
	var admitted atomic.Int32
	s := listen(t, Config{Auth: &Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret"}}},
		Handler: HandlerFunc(func(ctx context.Context, c *Call) {
			admitted.Add(1)
			_ = c.Reject(486, "Busy Here") // past authentication: enough
		})})
	u := siptest.NewRawUA(t, "127.0.0.1", s.Addr())
	authorize := func() string {
		t.Helper()
		res := u.Final(u.Send("INVITE", "", offer("127.0.0.1:40000")))
		if res.StatusCode != 401 {
			t.Fatalf("unauthenticated INVITE answered %d, want 401", res.StatusCode)
		}
		chal, err := digest.ParseChallenge(siptest.Header(res, "WWW-Authenticate"))
		if err != nil {
			t.Fatal(err)
		}
		cr, err := digest.Digest(chal, digest.Options{Method: "INVITE", URI: fmt.Sprintf("sip:acme@%s", s.Addr()), Username: "alice", Password: "secret", Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		return cr.String()
	}
	captured := authorize()
	if res := u.Final(u.Send("INVITE", captured, offer("127.0.0.1:40000"))); res.StatusCode != 486 {
		t.Fatalf("the first use answered %d, want the Handler's 486", res.StatusCode)
	}
	const replays = 19
	for i := range replays {
		res := u.Final(u.Send("INVITE", captured, offer("127.0.0.1:40000")))
		if res.StatusCode != 401 || !strings.Contains(siptest.Header(res, "WWW-Authenticate"), "stale=true") {
			t.Fatalf("replay %d answered %d %q, want 401 with stale=true", i, res.StatusCode, siptest.Header(res, "WWW-Authenticate"))
		}
	}
	if st := s.Stats(); st.DigestReplays != replays {
		t.Errorf("DigestReplays %d, want %d", st.DigestReplays, replays)
	}
	if res := u.Final(u.Send("INVITE", authorize(), offer("127.0.0.1:40000"))); res.StatusCode != 486 {
		t.Errorf("a fresh answer got %d, want the Handler's 486", res.StatusCode)
	}
	if n := admitted.Load(); n != 2 {
		t.Errorf("%d calls past authentication, want 2", n)
	}
}

// TestPendingPerAddr: 1,100 INVITEs from one address, answered and never
// acknowledged, hold at most MaxPendingPerAddr calls (the rest are
// answered 503 with Retry-After), and a caller from another address
// (127.0.0.2) is answered meanwhile.
func TestPendingPerAddr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const bound = 16
	var answered atomic.Int32
	calls := make(chan *Call, 1)
	s := listen(t, Config{MaxPendingPerAddr: bound, Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		answered.Add(1)
		if _, err := c.Answer(ctx); err != nil {
			return
		}
		calls <- c
		<-ctx.Done()
	})})
	u := siptest.NewRawUA(t, "127.0.0.1", s.Addr())
	codes := map[int]int{}
	for range 1100 {
		res := u.Final(u.Send("INVITE", "", offer(u.Local().Addr().String()+":40000")))
		codes[res.StatusCode]++
		if res.StatusCode == 503 && siptest.Header(res, "Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}
	if codes[200] != bound || codes[503] != 1100-bound {
		t.Errorf("answers %v, want %d 200 and %d 503", codes, bound, 1100-bound)
	}
	if st := s.Stats(); st.RefusedPending != 1100-bound {
		t.Errorf("RefusedPending %d, want %d", st.RefusedPending, 1100-bound)
	}
	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{LocalIP: netip.MustParseAddr("127.0.0.2")})
	if err != nil {
		t.Fatalf("a caller from another address: %v", err)
	}
	defer out.Close()
	c := <-calls
	if c.Source.Addr() != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("the call answered came from %v", c.Source)
	}
	if err := out.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	if n := answered.Load(); n != bound+1 {
		t.Errorf("%d calls reached the Handler, want %d", n, bound+1)
	}
}

// TestTCPBounds: 2,000 TCP connections from one address leave at most
// MaxTCPPerAddr open (the rest are closed at once), those are closed once
// idle, one that carries a call is not, and a caller from another address
// (127.0.0.2) is answered over TCP meanwhile.
func TestTCPBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const perAddr, idle, flood = 8, time.Second, 2000
	calls := make(chan *Call, 1)
	s := listen(t, Config{MaxTCPPerAddr: perAddr, TCPIdle: idle, Handler: answering(calls)})
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", s.Addr().String())
		if isReset(err) {
			continue // refused before the handshake was through
		}
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if open := s.Stats().TCPOpen; open > perAddr {
			t.Fatalf("%d connections open from one address, bound %d", open, perAddr)
		}
	}
	if st := s.Stats(); st.TCPRefused < flood/2 {
		t.Errorf("%d of %d connections refused", st.TCPRefused, flood)
	}

	out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s;transport=tcp", s.Addr()), DialConfig{LocalIP: netip.MustParseAddr("127.0.0.2")})
	if err != nil {
		t.Fatalf("a TCP caller from another address: %v", err)
	}
	defer out.Close()
	call := <-calls

	// Every connection of the flood ends: the refused ones at once, the
	// others after the idle time.
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * idle))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			open++
		}
	}
	if open != 0 {
		t.Errorf("%d of the flood's connections still open after %v", open, 10*idle)
	}
	if st := s.Stats(); st.TCPIdleClosed < perAddr || st.TCPOpen != 1 {
		t.Errorf("%d closed idle (want %d or more), %d open (want the call's alone)", st.TCPIdleClosed, perAddr, st.TCPOpen)
	}
	// The call's connection outlived the idle time: its BYE still goes.
	if err := out.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	<-call.Done()
	if !errors.Is(call.Err(), ErrRemoteHangup) {
		t.Errorf("call ended with %v, want the caller's BYE", call.Err())
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// TestRTPSource: RTP goes only where it is wanted and is heard only from
// the call's source. An offer naming another host (127.0.0.3) than the
// caller's (127.0.0.1) gets no RTP until that address sends the call's RTP
// itself, or the caller's host does (a phone behind NAT: symmetric RTP,
// latched once); RTP from anywhere else, another port of the caller's host
// included, is dropped and counted.
func TestRTPSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		offered  string   // the host the offer names
		foreign  []string // hosts that send RTP from ports of their own
		latch    string   // "offered" or "caller": who sends RTP first
		wantSent string   // who receives the reply: "offered", "caller" or ""
	}{
		{"offer names the caller", "127.0.0.1", []string{"127.0.0.1", "127.0.0.2"}, "", "offered"},
		{"offer names another host", "127.0.0.3", []string{"127.0.0.2", "127.0.0.4"}, "", ""},
		{"another host that sends first", "127.0.0.3", []string{"127.0.0.2", "127.0.0.4"}, "offered", "offered"},
		{"the caller's host sends first", "127.0.0.3", []string{"127.0.0.2", "127.0.0.4"}, "caller", "caller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			calls := make(chan *Call, 1)
			s := listen(t, Config{Handler: answering(calls)})
			offered := udpOn(t, tt.offered)
			caller := udpOn(t, "127.0.0.1") // another port of the caller's host
			out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{OfferAddr: offered.LocalAddr().(*net.UDPAddr).AddrPort()})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Hangup(ctx)
			call := <-calls
			m := call.Media()
			for _, from := range tt.foreign {
				sendRTP(t, from, m.LocalAddr(), 5)
			}
			waitFor(t, ctx, "the foreign RTP dropped", func() bool { return m.Stats().Foreign == 10 })
			switch tt.latch {
			case "offered":
				if _, err := offered.WriteToUDPAddrPort(rtpPacket(1, 100), m.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			case "caller":
				if _, err := caller.WriteToUDPAddrPort(rtpPacket(1, 100), m.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			if tt.latch != "" {
				waitFor(t, ctx, "the latched source heard", func() bool { return m.Stats().PacketsIn == 1 })
				// Latched once: the other one is foreign from now on.
				other := map[string]*net.UDPConn{"offered": caller, "caller": offered}[tt.latch]
				if _, err := other.WriteToUDPAddrPort(rtpPacket(2, 0x80), m.LocalAddr()); err != nil {
					t.Fatal(err)
				}
				waitFor(t, ctx, "the other source dropped", func() bool { return m.Stats().Foreign == 11 })
			}
			if err := m.WritePCM(constant(6000, 400*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if err := m.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{"offered": received(offered), "caller": received(caller)}
			for who, n := range got {
				if (n > 0) != (who == tt.wantSent) {
					t.Errorf("%s received %d bytes of RTP; want the reply sent to %q", who, n, tt.wantSent)
				}
			}
			if st := m.Stats(); (st.Withheld > 0) != (tt.wantSent == "") {
				t.Errorf("%d packets withheld, with the reply sent to %q", st.Withheld, tt.wantSent)
			}
			for len(m.Frames()) > 0 {
				if f := <-m.Frames(); f.Payload[0] != 100 {
					t.Errorf("a foreign frame was heard: %x", f.Payload[:4])
				}
			}
			if st := s.Stats(); st.RTPForeign != m.Stats().Foreign {
				t.Errorf("server RTPForeign %d, want the call's %d", st.RTPForeign, m.Stats().Foreign)
			}
		})
	}
}

// udpOn is a UDP socket on host, closed with the test.
func udpOn(t *testing.T, host string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// received is how many bytes c has queued, read within 200 ms of quiet.
func received(c *net.UDPConn) int {
	got := 0
	buf := make([]byte, 2000)
	for {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return got
		}
		got += n
	}
}

// rtpPacket is one PCMU packet of 160 bytes of fill.
func rtpPacket(seq uint16, fill byte) []byte {
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: seq, Timestamp: uint32(seq) * 160, SSRC: 9},
		Payload: make([]byte, 160)}
	for i := range p.Payload {
		p.Payload[i] = fill
	}
	b, _ := p.Marshal()
	return b
}

// sendRTP sends n loud PCMU packets to dst from a new socket on host from.
func sendRTP(t *testing.T, from string, dst netip.AddrPort, n int) {
	t.Helper()
	conn := udpOn(t, from)
	for i := range n {
		if _, err := conn.WriteToUDPAddrPort(rtpPacket(uint16(i), 0x80), dst); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAddrKey: per-address bounds count an IPv4 address alone and an IPv6
// address by its /64, so that one host's many addresses are one.
func TestAddrKey(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"::ffff:127.0.0.1", "127.0.0.1", true},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", false},
	}
	for _, tt := range tests {
		ka, kb := addrKey(netip.MustParseAddr(tt.a)), addrKey(netip.MustParseAddr(tt.b))
		if (ka == kb) != tt.same {
			t.Errorf("%s and %s: keys %v and %v, want the same: %v", tt.a, tt.b, ka, kb, tt.same)
		}
	}
}
