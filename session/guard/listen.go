package guard

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// ServerLimits are the HTTP server's timeouts and sizes.
type ServerLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers, which is the
	// whole WebSocket handshake from the client (slowloris).
	ReadHeaderTimeout time.Duration
	// ReadTimeout and WriteTimeout bound a whole request and its answer.
	// net/http clears both when a WebSocket takes the connection over, so
	// they apply to plain requests only.
	ReadTimeout, WriteTimeout time.Duration
	// IdleTimeout bounds a keep-alive connection between requests.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxConns bounds the connections open at once (0: no bound); the
	// connection over it is answered 503 and closed.
	MaxConns int
	// ConnIdle closes a connection, WebSocket included, from which nothing
	// was read for this long (0: no limit).
	ConnIdle time.Duration
	// MaxConnsPerAddr bounds the connections open at once from one source
	// address (0: no bound); the connection over it is answered 429 and
	// closed. For a peer in TrustedProxies the address is the client's,
	// from X-Forwarded-For, and the bound is applied per request instead
	// (addr.go).
	MaxConnsPerAddr int
	// MaxHandshakesPerAddr bounds the connections from one source address
	// whose first request has not yet fully arrived (slowloris; 0: no
	// bound); over it 429. Not applied to trusted proxies, which send whole
	// requests.
	MaxHandshakesPerAddr int
	// ProbeConns is a small budget of connections taken over the caps
	// (MaxConns and the per-address ones) that are served only /healthz,
	// /readyz and /metrics; any other request on them gets the 503 or 429
	// it would have had, and every one of them is closed after its answer.
	// A caller filling the caps therefore never refuses a health check
	// (0: no budget, over a cap every connection is refused at once).
	ProbeConns int
	// WriteBuffer sets each connection's kernel send buffer (bytes; 0: the
	// system's, which on Linux grows to megabytes). A caller that stops
	// reading is found when a write stalls, which only happens once the
	// buffers between are full: at real-time audio rates a large buffer
	// hides a dead reader for tens of seconds, holding its synthesis lease.
	WriteBuffer int
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
}

// DefaultServerLimits are frontdoor serve's defaults (docs/SECURITY.md).
var DefaultServerLimits = ServerLimits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    16 << 10,
	MaxConns:          1000,
	ConnIdle:          5 * time.Minute,

	MaxConnsPerAddr:      100,
	MaxHandshakesPerAddr: 20,
	ProbeConns:           16,
	WriteBuffer:          64 << 10,
}

// NewServer returns an http.Server for h with the limits set. Served on a
// Listener of Listen, it enforces what the listener decided for each
// connection (probe-only connections, per-client bounds behind a proxy,
// the end of a connection's handshake).
func (l ServerLimits) NewServer(h http.Handler, log *slog.Logger) *http.Server {
	s := &http.Server{Handler: connGate(h), ConnContext: withConn, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}
	if log != nil {
		s.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	}
	return s
}

// Answers written to a connection refused at once, before it is closed.
const (
	busyAnswer    = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 18\r\nConnection: close\r\n\r\ntoo many requests\n"
	perAddrAnswer = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 34\r\nConnection: close\r\n\r\ntoo many connections from address\n"
)

// Per-address limits of the probe budget: one address may hold only a few
// of its connections, so that it cannot take the budget meant for health
// checks; and they must send their request promptly.
const (
	probesPerAddr = 2
	probeIdle     = 2 * time.Second
)

// Listen wraps ln: at most MaxConns connections at once, MaxConnsPerAddr
// from one address and MaxHandshakesPerAddr of those still sending their
// first request (the one over a cap is answered 503 or 429 and closed at
// once, so that no backlog builds, unless it fits the ProbeConns budget),
// and connections idle for ConnIdle are cut.
func (l ServerLimits) Listen(ln net.Listener) *Listener {
	return &Listener{Listener: ln, lim: l, addrs: map[netip.Addr]*addrCount{}, clients: map[netip.Addr]int{}}
}

// Listener is a net.Listener with bounds on connections at once, in all
// and per source address.
type Listener struct {
	net.Listener
	lim ServerLimits

	mu      sync.Mutex
	open    int64
	probes  int
	refused int64
	addrs   map[netip.Addr]*addrCount // by peer address (not trusted proxies)
	clients map[netip.Addr]int        // connections by client address behind trusted proxies
}

type addrCount struct{ open, handshakes, probes int }

// Open returns the connections open now (probe ones excluded); Refused
// those turned away at once.
func (l *Listener) Open() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused returns the connections refused at once.
func (l *Listener) Refused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if cc := l.admit(c); cc != nil {
			return cc, nil
		}
	}
}

// admit decides what a new connection is: counted, probe-only or refused
// (nil: answered and closed).
func (l *Listener) admit(c net.Conn) *conn {
	peer := peerAddr(c.RemoteAddr())
	trusted := peer.IsValid() && inPrefixes(peer, l.lim.TrustedProxies)
	addr := peer
	if addr.IsValid() {
		addr = addrKey(addr)
	}
	l.mu.Lock()
	var a *addrCount
	if addr.IsValid() && !trusted {
		if a = l.addrs[addr]; a == nil {
			a = &addrCount{}
			l.addrs[addr] = a
		}
	}
	refuse := 0
	switch {
	case l.lim.MaxConns > 0 && l.open >= int64(l.lim.MaxConns):
		refuse = http.StatusServiceUnavailable
	case a != nil && l.lim.MaxConnsPerAddr > 0 && a.open >= l.lim.MaxConnsPerAddr,
		a != nil && l.lim.MaxHandshakesPerAddr > 0 && a.handshakes >= l.lim.MaxHandshakesPerAddr:
		refuse = http.StatusTooManyRequests
	}
	cc := &conn{Conn: c, l: l, idle: l.lim.ConnIdle, addr: addr, peer: peer, trusted: trusted, counts: a}
	switch {
	case refuse == 0:
		if tc, ok := c.(*net.TCPConn); ok && l.lim.WriteBuffer > 0 {
			_ = tc.SetWriteBuffer(l.lim.WriteBuffer)
		}
		l.open++
		if a != nil {
			a.open++
			a.handshakes++
			cc.handshake = true
		}
	case l.probes < l.lim.ProbeConns && (a == nil || a.probes < probesPerAddr):
		l.probes++
		if a != nil {
			a.probes++
		}
		cc.probe, cc.refuse, cc.idle = true, refuse, probeIdle
	default:
		l.refused++
		l.forgetLocked(addr, a)
		l.mu.Unlock()
		answer := busyAnswer
		if refuse == http.StatusTooManyRequests {
			answer = perAddrAnswer
		}
		// Bounded: the answer fits the socket buffer, and the write
		// cannot wait on a client that does not read. The deadline is
		// the kernel's, on the wall clock (net.Conn takes no other), not
		// the engine's.
		_ = c.SetWriteDeadline(clock.Wall(100 * time.Millisecond))
		_, _ = c.Write([]byte(answer))
		_ = c.Close()
		return nil
	}
	l.mu.Unlock()
	return cc
}

// forgetLocked drops an address's counts once it has nothing open.
func (l *Listener) forgetLocked(addr netip.Addr, a *addrCount) {
	if a != nil && a.open == 0 && a.handshakes == 0 && a.probes == 0 {
		delete(l.addrs, addr)
	}
}

// conn counts itself out once closed and, with idle set, makes every Read
// give up after idle (or the deadline its user set, if earlier), less at
// most idle/idleSlack.
//
// mu is held while the socket's read deadline is set, by Read as by
// SetReadDeadline: a deadline set while Read arms its idle deadline must
// not be overwritten by it. net/http's Hijack (the WebSocket upgrade) stops
// the server's background read by setting a deadline in the past and waits
// for that Read to return; a Read that put its own deadline back after it
// would wait for the caller's next byte, and the upgrade with it, while
// the caller (already answered 101) waits for its first message.
type conn struct {
	net.Conn
	l    *Listener
	idle time.Duration
	once sync.Once

	// Set by the listener at accept.
	addr    netip.Addr // the peer's key in the per-address counts (addrKey)
	peer    netip.Addr // the peer's own address
	trusted bool       // the peer is a trusted proxy
	counts  *addrCount // the peer address's counts (nil: not counted per address)
	probe   bool       // taken over a cap: health checks only
	refuse  int        // a probe connection's answer to anything else

	mu        sync.Mutex
	deadline  time.Time  // the read deadline the user (net/http) set
	armed     time.Time  // the read deadline last set on the socket
	handshake bool       // counted as a handshake in progress
	client    netip.Addr // behind a trusted proxy: the client it counts for
}

func (c *conn) Read(b []byte) (int, error) {
	if c.idle > 0 {
		c.mu.Lock()
		// A socket deadline: the poller holds it on the wall clock, as
		// net/http's own deadlines are, so it is read from there.
		d := clock.Wall(c.idle)
		if !c.deadline.IsZero() && c.deadline.Before(d) {
			d = c.deadline
		}
		// A deadline moved later by less than idleSlack is left as it
		// is: a call reads 50 frames a second, and re-arming the poller's
		// timer for each was a few per cent of the server's CPU.
		if late := d.Sub(c.armed); c.armed.IsZero() || late < 0 || late >= c.idle/idleSlack {
			_ = c.Conn.SetReadDeadline(d)
			c.armed = d
		}
		c.mu.Unlock()
	}
	return c.Conn.Read(b)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline, c.armed = t, t
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline, c.armed = t, t
	return c.Conn.SetDeadline(t)
}

// idleSlack: a Read re-arms the socket's deadline only once it would move
// it by idle/idleSlack or more, so an idle connection is cut after
// between idle·(1-1/idleSlack) and idle.
const idleSlack = 32

// requested notes that a whole request has arrived: the connection's
// handshake is over.
func (c *conn) requested() {
	c.mu.Lock()
	done := c.handshake
	c.handshake = false
	c.mu.Unlock()
	if done && c.l != nil {
		c.l.mu.Lock()
		c.counts.handshakes--
		c.l.mu.Unlock()
	}
}

// forClient counts the connection, from a trusted proxy, for client
// (X-Forwarded-For): it counts for the client of its latest request. It
// reports false when the client is at its bound.
func (c *conn) forClient(client netip.Addr) bool {
	if client.IsValid() {
		client = addrKey(client)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == client || c.l == nil {
		return true
	}
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if max := l.lim.MaxConnsPerAddr; max > 0 && l.clients[client] >= max {
		return false
	}
	l.releaseClientLocked(c.client)
	c.client = client
	l.clients[client]++
	return true
}

func (l *Listener) releaseClientLocked(client netip.Addr) {
	if !client.IsValid() {
		return
	}
	if l.clients[client]--; l.clients[client] <= 0 {
		delete(l.clients, client)
	}
}

func (c *conn) Close() error {
	c.once.Do(func() {
		if c.l == nil || c.l.addrs == nil {
			return
		}
		c.mu.Lock()
		hs, client := c.handshake, c.client
		c.handshake = false
		c.mu.Unlock()
		l := c.l
		l.mu.Lock()
		defer l.mu.Unlock()
		l.releaseClientLocked(client)
		if c.probe {
			l.probes--
		} else {
			l.open--
		}
		if a := c.counts; a != nil {
			if c.probe {
				a.probes--
			} else {
				a.open--
			}
			if hs {
				a.handshakes--
			}
			l.forgetLocked(c.addr, a)
		}
	})
	return c.Conn.Close()
}
