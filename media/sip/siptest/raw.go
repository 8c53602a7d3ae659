package siptest

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	sipmsg "github.com/emiago/sipgo/sip"
)

// RawUA writes SIP requests by hand over UDP from one local address and
// reads the answers: what a well-behaved client never sends (a captured
// Authorization sent again, INVITEs never acknowledged), for tests of a
// server's bounds. It answers nothing, not even a 200 OK with an ACK.
type RawUA struct {
	t     testing.TB
	conn  *net.UDPConn
	local netip.AddrPort
	srv   netip.AddrPort
	n     int
}

// NewRawUA binds a UDP port on localIP (127.0.0.1, 127.0.0.2, ...) for
// requests to srv; it is closed when the test ends.
func NewRawUA(t testing.TB, localIP string, srv netip.AddrPort) *RawUA {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(localIP), 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &RawUA{t: t, conn: conn, local: conn.LocalAddr().(*net.UDPAddr).AddrPort(), srv: srv}
}

// Local is the address the requests leave from.
func (u *RawUA) Local() netip.AddrPort { return u.local }

// Send sends a new request to sip:acme@srv (a Call-ID and branch of its
// own), with an Authorization when auth is not empty and an SDP body when
// sdp is not nil, and returns its Call-ID.
func (u *RawUA) Send(method, auth string, sdp []byte) string {
	u.t.Helper()
	u.n++
	now := time.Now().UnixNano()
	id := fmt.Sprintf("raw-%d-%d@%s", u.n, now, u.local.Addr())
	var b strings.Builder
	fmt.Fprintf(&b, "%s sip:acme@%s SIP/2.0\r\n", method, u.srv)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP %s;branch=z9hG4bK-raw%d-%d\r\n", u.local, u.n, now)
	fmt.Fprintf(&b, "Max-Forwards: 70\r\nFrom: <sip:caller@%s>;tag=raw%d\r\nTo: <sip:acme@%s>\r\n", u.local.Addr(), u.n, u.srv)
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: 1 %s\r\nContact: <sip:caller@%s>\r\n", id, method, u.local)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", auth)
	}
	if sdp != nil {
		b.WriteString("Content-Type: application/sdp\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(sdp), sdp)
	if _, err := u.conn.WriteToUDPAddrPort([]byte(b.String()), u.srv); err != nil {
		u.t.Fatal(err)
	}
	return id
}

// Final reads until the final answer to the request with Call-ID id
// (answers to others, such as retransmitted 200s, are skipped); it fails
// the test after 10 s without one.
func (u *RawUA) Final(id string) *sipmsg.Response {
	u.t.Helper()
	buf := make([]byte, 65536)
	_ = u.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, _, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			u.t.Fatalf("siptest: no answer to %s: %v", id, err)
		}
		msg, err := sipmsg.ParseMessage(append([]byte(nil), buf[:n]...))
		if err != nil {
			continue
		}
		res, ok := msg.(*sipmsg.Response)
		if !ok || res.CallID() == nil || res.CallID().Value() != id || res.StatusCode < 200 {
			continue
		}
		return res
	}
}

// Header is the value of a response's header name, "" without one.
func Header(res *sipmsg.Response, name string) string {
	if h := res.GetHeader(name); h != nil {
		return h.Value()
	}
	return ""
}

// Offer is an SDP offer of PCMU (and telephone-event) with RTP at addr.
func Offer(addr netip.AddrPort) []byte {
	return fmt.Appendf(nil, "v=0\r\no=- 1 1 IN IP4 %[1]s\r\ns=-\r\nc=IN IP4 %[1]s\r\nt=0 0\r\n"+
		"m=audio %[2]d RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=ptime:20\r\na=sendrecv\r\n",
		addr.Addr(), addr.Port())
}
