package guard

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestAddrKey: the per-address caps count an IPv4 address by itself and an
// IPv6 address by its /64, so that one subscriber's /64 is one source.
func TestAddrKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"203.0.113.9", "203.0.113.9"},
		{"::ffff:203.0.113.9", "203.0.113.9"}, // IPv4-mapped: the IPv4 address
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::"}, // same /64, same key
		{"2001:db8:1:3::1", "2001:db8:1:3::"},                  // the next /64: another source
		{"::1", "::"},
		{"fe80::1%eth0", "fe80::"}, // the zone is dropped with the host bits
	} {
		if got := addrKey(netip.MustParseAddr(c.in)); got != netip.MustParseAddr(c.want) {
			t.Errorf("addrKey(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestClientOf(t *testing.T) {
	trusted, err := ParsePrefixes("10.0.0.0/8, 192.168.1.1")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"203.0.113.9", []string{"1.2.3.4"}, "203.0.113.9"},         // untrusted peer: its XFF is ignored
		{"10.1.2.3", nil, "10.1.2.3"},                               // trusted, no XFF
		{"10.1.2.3", []string{"1.2.3.4"}, "1.2.3.4"},                // trusted: the client
		{"10.1.2.3", []string{"6.6.6.6, 1.2.3.4"}, "1.2.3.4"},       // the client's own claim is to the left
		{"10.1.2.3", []string{"1.2.3.4", "192.168.1.1"}, "1.2.3.4"}, // through two proxies
		{"192.168.1.1", []string{"junk, 1.2.3.4"}, "1.2.3.4"},       // unreadable hop to the left
		{"10.1.2.3", []string{"1.2.3.4, junk"}, "10.1.2.3"},         // unreadable last hop: the proxy
		{"10.1.2.3", []string{"::ffff:1.2.3.4"}, "1.2.3.4"},         // mapped
	} {
		if got := clientOf(a(c.peer), c.xff, trusted); got != a(c.want) {
			t.Errorf("peer %s xff %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
	if _, err := ParsePrefixes("10.0.0.0/33"); err == nil {
		t.Error("bad prefix accepted")
	}
}

// rawGet sends a request on a new connection from ip and returns the
// status line.
func rawGet(t *testing.T, addr, ip, path, xff string) string {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
	if xff != "" {
		req += "X-Forwarded-For: " + xff + "\r\n"
	}
	_, _ = io.WriteString(c, req+"\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// Per-address caps: a second connection from one address is refused 429
// at once (no probe budget), another address is served; behind a trusted
// proxy the cap is per X-Forwarded-For client; a handshake in progress
// counts against its address; probe connections serve /healthz only.
func TestListenerPerAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lims := ServerLimits{MaxConnsPerAddr: 1, MaxHandshakesPerAddr: 1, ConnIdle: time.Minute,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}}
	l := lims.Listen(ln)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	srv := lims.NewServer(h, nil)
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	addr := ln.Addr().String()

	// A half-sent request holds 127.0.0.2's only handshake.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	slow, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "GET / HTTP/1.1\r\n")
	waitOpen(t, l, 1)
	if got := rawGet(t, addr, "127.0.0.2", "/", ""); !strings.Contains(got, "429") {
		t.Fatalf("second connection from one address: %q, want 429", got)
	}
	if got := rawGet(t, addr, "127.0.0.3", "/", ""); !strings.Contains(got, "200") {
		t.Fatalf("another address: %q, want 200", got)
	}
	// Behind the trusted proxy: one connection per client.
	p1 := rawGet(t, addr, "127.0.0.9", "/", "1.2.3.4")
	p2 := rawGet(t, addr, "127.0.0.9", "/", "1.2.3.4")
	p3 := rawGet(t, addr, "127.0.0.9", "/", "5.6.7.8")
	if !strings.Contains(p1, "200") || !strings.Contains(p2, "429") || !strings.Contains(p3, "200") {
		t.Fatalf("through the proxy: %q %q %q, want 200 429 200", p1, p2, p3)
	}
	// An untrusted peer's X-Forwarded-For changes nothing.
	if got := rawGet(t, addr, "127.0.0.2", "/", "9.9.9.9"); !strings.Contains(got, "429") {
		t.Fatalf("forged X-Forwarded-For: %q, want 429", got)
	}
	if l.Refused() == 0 {
		t.Fatal("no connection counted refused")
	}
}

// Over a cap, probe connections serve health checks and metrics only.
func TestListenerProbeBudget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lims := ServerLimits{MaxConns: 1, ProbeConns: 4}
	l := lims.Listen(ln)
	srv := lims.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }), nil)
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	held, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitOpen(t, l, 1)
	if got := rawGet(t, ln.Addr().String(), "127.0.0.1", "/v1/session", ""); !strings.Contains(got, "503") {
		t.Fatalf("a call on a full server: %q, want 503", got)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if got := rawGet(t, ln.Addr().String(), "127.0.0.4", p, ""); !strings.Contains(got, "200") {
			t.Fatalf("%s on a full server: %q, want 200", p, got)
		}
	}
}

// waitOpen waits until the listener has counted n connections.
func waitOpen(t *testing.T, l *Listener, n int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); l.Open() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("listener open %d, want %d", l.Open(), n)
		}
	}
}
