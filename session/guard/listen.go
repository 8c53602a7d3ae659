package guard

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
}

// NewServer returns an http.Server for h with the limits set.
func (l ServerLimits) NewServer(h http.Handler, log *slog.Logger) *http.Server {
	s := &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}
	if log != nil {
		s.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	}
	return s
}

// busyAnswer is written to a connection over MaxConns before it is closed.
const busyAnswer = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 18\r\nConnection: close\r\n\r\ntoo many requests\n"

// Listen wraps ln: at most MaxConns connections at once (the one over it
// is answered 503 and closed at once, so that no backlog builds) and
// connections idle for ConnIdle are cut.
func (l ServerLimits) Listen(ln net.Listener) *Listener {
	return &Listener{Listener: ln, max: int64(l.MaxConns), idle: l.ConnIdle}
}

// Listener is a net.Listener with a bound on connections at once.
type Listener struct {
	net.Listener
	max     int64
	idle    time.Duration
	open    atomic.Int64
	refused atomic.Int64
}

// Open returns the connections open now; Refused those turned away.
func (l *Listener) Open() int64    { return l.open.Load() }
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.max > 0 && l.open.Load() >= l.max {
			l.refused.Add(1)
			// Bounded: the answer fits the socket buffer, and the write
			// cannot wait on a client that does not read.
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Write([]byte(busyAnswer))
			_ = c.Close()
			continue
		}
		l.open.Add(1)
		return &conn{Conn: c, l: l, idle: l.idle}, nil
	}
}

// conn counts itself out once closed and, with idle set, makes every Read
// give up after idle (or the deadline its user set, if earlier).
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

	mu       sync.Mutex
	deadline time.Time // the read deadline the user (net/http) set
}

func (c *conn) Read(b []byte) (int, error) {
	if c.idle > 0 {
		c.mu.Lock()
		d := time.Now().Add(c.idle)
		if !c.deadline.IsZero() && c.deadline.Before(d) {
			d = c.deadline
		}
		_ = c.Conn.SetReadDeadline(d)
		c.mu.Unlock()
	}
	return c.Conn.Read(b)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetDeadline(t)
}

func (c *conn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
