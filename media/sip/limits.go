package sip

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Stats counts what the server refused or dropped to stay up, since it
// started.
type Stats struct {
	// RefusedBusy: INVITEs and OPTIONS answered 503 because the server was
	// closing, Config.Busy said so, or Config.MaxCalls calls were running.
	RefusedBusy uint64
	// RefusedPending: INVITEs answered 503 because their source address
	// already had Config.MaxPendingPerAddr INVITEs not acknowledged.
	RefusedPending uint64
	// DigestReplays: INVITEs whose Authorization reused a nonce (and nc)
	// already used, answered 401 with stale=true.
	DigestReplays uint64
	// TCPRefused: TCP connections closed at once, over Config.MaxTCP or
	// Config.MaxTCPPerAddr.
	TCPRefused uint64
	// TCPIdleClosed: TCP connections closed after Config.TCPIdle without a
	// byte or a call.
	TCPIdleClosed uint64
	// TCPOpen is the number of TCP connections open now.
	TCPOpen int
	// RTPForeign: datagrams to a call's RTP port from anywhere but the
	// call's source, dropped.
	RTPForeign uint64
	// RTPWithheld: RTP packets not sent because the address in the
	// caller's SDP had not yet proven it wants them (it is not the
	// signalling source and has sent no RTP).
	RTPWithheld uint64
}

// counters are a server's Stats, shared with its calls' Media.
type counters struct {
	refusedBusy, refusedPending, replays   atomic.Uint64
	tcpRefused, tcpIdle, foreign, withheld atomic.Uint64
}

func (c *counters) stats() Stats {
	return Stats{
		RefusedBusy:    c.refusedBusy.Load(),
		RefusedPending: c.refusedPending.Load(),
		DigestReplays:  c.replays.Load(),
		TCPRefused:     c.tcpRefused.Load(),
		TCPIdleClosed:  c.tcpIdle.Load(),
		RTPForeign:     c.foreign.Load(),
		RTPWithheld:    c.withheld.Load(),
	}
}

// addrKey is what per-address bounds count by: an IPv4 address, or the
// /64 of an IPv6 one (one host commonly holds a whole /64).
func addrKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// tcpLimiter is the TCP listener sipgo serves: it closes a connection over
// the total or per-address bound as soon as it is accepted, and hands
// sipgo connections that end after an idle time without a call, so that
// no one address can hold the process's descriptors.
type tcpLimiter struct {
	*net.TCPListener
	ctx     context.Context // ends with the server: stops the accept backoff
	idle    time.Duration
	perAddr int
	max     int
	inCall  func(remote string) bool // a call runs over this connection
	count   *counters

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]int
}

// open is the number of connections open now.
func (l *tcpLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Accept returns the next connection within the bounds. A failure that
// may pass (out of descriptors) is waited out, not returned: sipgo stops
// serving TCP for good on any Accept error.
func (l *tcpLimiter) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.TCPListener.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || l.ctx.Err() != nil {
				return nil, err
			}
			t := clock.NewTimer(clock.System, backoff)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return nil, err
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		remote := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		key := addrKey(remote.Addr())
		if !l.take(key) {
			l.count.tcpRefused.Add(1)
			_ = c.SetLinger(0) // a reset: no TIME_WAIT kept for a refused peer
			c.Close()
			continue
		}
		return &limitedConn{TCPConn: c, l: l, key: key, remote: remote.String()}, nil
	}
}

func (l *tcpLimiter) take(key netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max || l.byAddr[key] >= l.perAddr {
		return false
	}
	l.total++
	l.byAddr[key]++
	return true
}

func (l *tcpLimiter) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byAddr[key]--; l.byAddr[key] <= 0 {
		delete(l.byAddr, key)
	}
}

// limitedConn is one accepted connection: counted until closed, and
// closed by its reader after an idle time with no call on it.
type limitedConn struct {
	*net.TCPConn
	l      *tcpLimiter
	key    netip.Addr
	remote string // as sipgo names it: the source of its requests
	once   sync.Once
}

// Read reads with the idle bound: a read that waits longer than it ends
// the connection (io.EOF, which sipgo takes for a peer that closed),
// unless a call runs over it, whose BYE may come much later.
func (c *limitedConn) Read(b []byte) (int, error) {
	for {
		_ = c.SetReadDeadline(clock.Wall(c.l.idle))
		n, err := c.TCPConn.Read(b)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if c.l.inCall(c.remote) {
			continue
		}
		c.l.count.tcpIdle.Add(1)
		c.Close()
		return 0, io.EOF
	}
}

// Close closes the connection and gives its place back, once.
func (c *limitedConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}
