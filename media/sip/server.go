package sip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// ErrConfig reports a Config that Listen cannot serve.
var ErrConfig = errors.New("sip: bad config")

// ErrServerClosed ends the calls of a server that was closed.
var ErrServerClosed = errors.New("sip: server closed")

// A Handler answers or rejects one incoming call. ServeSIP runs for the
// whole call, in a goroutine of its own; when it returns, a call still
// ringing is rejected with 480 and an answered one is hung up (BYE). ctx
// ends with the call.
type Handler interface {
	ServeSIP(ctx context.Context, call *Call)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, call *Call)

// ServeSIP calls f(ctx, call).
func (f HandlerFunc) ServeSIP(ctx context.Context, call *Call) { f(ctx, call) }

// TenantSource says where a call's tenant comes from.
type TenantSource int

const (
	// TenantFromRequestURI takes the user part of the request URI
	// (sip:acme@frontdoor.example.com is tenant acme): what a trunk dials.
	TenantFromRequestURI TenantSource = iota
	// TenantFromUser takes the authenticated User's Tenant; needs Auth.
	TenantFromUser
	// TenantFromHeader takes the header named Config.TenantHeader (for
	// example X-Tenant set by a PBX); needs Auth, because a header from an
	// unauthenticated caller could name any tenant.
	TenantFromHeader
	// TenantFromUserOrRequestURI takes the authenticated User's Tenant
	// when it has one (the user is pinned to it), and otherwise the
	// request URI's user part (a trunk trusted to dial any tenant);
	// needs Auth.
	TenantFromUserOrRequestURI
)

// Config configures a Server.
type Config struct {
	Handler      Handler
	Tenant       TenantSource
	TenantHeader string // with TenantFromHeader
	Auth         *Auth  // nil: callers are not authenticated
	// MediaIP is the address RTP is received on and the SDP answer names;
	// default the listen address's host, which must then be specific (not
	// 0.0.0.0 or ::).
	MediaIP netip.Addr
	// Codecs in order of preference; default PCMU then PCMA.
	Codecs []Codec
	// MaxCalls bounds the calls ringing or answered at once; an INVITE over
	// it gets 503 before any Handler sees it. Default 1000. It protects the
	// process; admission is the Handler's business.
	MaxCalls int
	// Busy, when set, is asked for each new INVITE and OPTIONS: true
	// answers them 503 with Retry-After before anything else (a drain, or
	// a service with no room), so that a trunk fails over to another
	// route and its health checks mark this one down.
	Busy func() bool
	// RetryAfter is the Retry-After of a 503, in whole seconds; default 5 s.
	RetryAfter time.Duration
	// MaxPendingPerAddr bounds the INVITEs from one source address (an
	// IPv6 /64) that are ringing or answered but not yet acknowledged;
	// the next one gets 503. Default 16. An ACK proves the source
	// receives what is sent to it; without this bound one source that
	// never acknowledges could hold every one of MaxCalls for 32 s each.
	MaxPendingPerAddr int
	// TCPIdle closes a TCP connection that has carried no byte for this
	// long and no call; default 30 s. A peer that keeps its connection
	// open sends RFC 5626 keep-alives (CRLF) more often.
	TCPIdle time.Duration
	// MaxTCPPerAddr bounds the TCP connections open at once from one
	// address (an IPv6 /64); one over it is closed as soon as it is
	// accepted. Default 32.
	MaxTCPPerAddr int
	// MaxTCP bounds the TCP connections open at once; default 1024.
	MaxTCP int
	// MaxNonces bounds the digest nonces remembered as used (for replay
	// detection); when it is reached the oldest are forgotten and every
	// nonce issued before them is taken for stale. Default 65536.
	MaxNonces int
	UserAgent string       // the User-Agent and Server header; default "frontdoor"
	Logger    *slog.Logger // default: discard
	// Clock tells nonces' age and when a call's RTP last arrived
	// (Media.LastHeard); give it the clock of the Handler's timers.
	// Default clock.System. The protocol's own timers (retransmissions,
	// RTP's pace) run on clock.System whatever this is: the peer at the
	// other end keeps real time.
	Clock clock.Clock
}

// allowed is the Allow header of 200 OK and OPTIONS answers.
const allowed = "INVITE, ACK, CANCEL, BYE, OPTIONS"

// Server is a SIP user-agent server on UDP and TCP at one address.
type Server struct {
	cfg    Config
	auth   *authenticator
	addr   netip.AddrPort
	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	dlgUDP *sipgo.DialogUA // dialogs of calls over UDP
	dlgTCP *sipgo.DialogUA // and over TCP
	udp    *net.UDPConn
	tcp    *net.TCPListener
	tcpLim *tcpLimiter
	log    *slog.Logger
	count  counters

	ctx     context.Context
	cancel  context.CancelFunc
	serving sync.WaitGroup // the listeners' goroutines
	calls   sync.WaitGroup // the INVITE handlers

	unwatch func() bool // stops Listen's ctx from closing the server

	mu       sync.Mutex
	closed   bool
	active   map[string]*Call   // by dialog ID
	pending  map[netip.Addr]int // INVITEs not yet acknowledged, by addrKey of their source
	tcpCalls map[string]int     // calls over a TCP connection, by its remote address
	once     sync.Once
}

// Listen binds addr (host:port; port 0 picks one) on both UDP and TCP and
// serves SIP there until ctx ends or Close is called.
func Listen(ctx context.Context, addr string, cfg Config) (*Server, error) {
	if cfg.Handler == nil {
		return nil, fmt.Errorf("%w: no Handler", ErrConfig)
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: listen address %q: %v", ErrConfig, addr, err)
	}
	if !cfg.MediaIP.IsValid() {
		if ap.Addr().IsUnspecified() {
			return nil, fmt.Errorf("%w: listen address %s is unspecified: set MediaIP", ErrConfig, ap)
		}
		cfg.MediaIP = ap.Addr()
	}
	if len(cfg.Codecs) == 0 {
		cfg.Codecs = []Codec{PCMU, PCMA}
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = 1000
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "frontdoor"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.RetryAfter < time.Second {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.MaxPendingPerAddr <= 0 {
		cfg.MaxPendingPerAddr = 16
	}
	if cfg.TCPIdle <= 0 {
		cfg.TCPIdle = 30 * time.Second
	}
	if cfg.MaxTCPPerAddr <= 0 {
		cfg.MaxTCPPerAddr = 32
	}
	if cfg.MaxTCP <= 0 {
		cfg.MaxTCP = 1024
	}
	if cfg.MaxNonces <= 0 {
		cfg.MaxNonces = 1 << 16
	}
	s := &Server{cfg: cfg, log: cfg.Logger, active: map[string]*Call{},
		pending: map[netip.Addr]int{}, tcpCalls: map[string]int{}}
	switch cfg.Tenant {
	case TenantFromRequestURI:
	case TenantFromUser, TenantFromHeader, TenantFromUserOrRequestURI:
		if cfg.Auth == nil {
			return nil, fmt.Errorf("%w: the tenant from the user or a header needs Auth", ErrConfig)
		}
		if cfg.Tenant == TenantFromHeader && cfg.TenantHeader == "" {
			return nil, fmt.Errorf("%w: TenantFromHeader without TenantHeader", ErrConfig)
		}
	default:
		return nil, fmt.Errorf("%w: TenantSource %d", ErrConfig, cfg.Tenant)
	}
	if cfg.Auth != nil {
		if s.auth, err = newAuthenticator(cfg.Auth, cfg.Clock.Now, cfg.MaxNonces); err != nil {
			return nil, err
		}
	}
	if s.udp, s.tcp, s.addr, err = bindPair(ap); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.udp.Close()
		s.tcp.Close()
		return nil, err
	}
	return s, nil
}

// bindPair opens UDP and TCP on the same port of ap (any free one when
// ap's port is 0).
func bindPair(ap netip.AddrPort) (*net.UDPConn, *net.TCPListener, netip.AddrPort, error) {
	for range 20 {
		udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return nil, nil, netip.AddrPort{}, fmt.Errorf("sip: listen udp %s: %w", ap, err)
		}
		bound := udp.LocalAddr().(*net.UDPAddr).AddrPort()
		tcp, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(bound))
		if err != nil {
			udp.Close()
			if ap.Port() == 0 {
				continue // the port picked for UDP is taken on TCP: pick again
			}
			return nil, nil, netip.AddrPort{}, fmt.Errorf("sip: listen tcp %s: %w", bound, err)
		}
		return udp, tcp, netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port()), nil
	}
	return nil, nil, netip.AddrPort{}, fmt.Errorf("sip: no port free on both UDP and TCP at %s", ap.Addr())
}

func (s *Server) start(ctx context.Context) error {
	ua, err := sipgo.NewUA(
		sipgo.WithUserAgent(s.cfg.UserAgent),
		sipgo.WithUserAgentHostname(s.addr.Addr().String()),
		sipgo.WithUserAgentTransportLayerOptions(sipmsg.WithTransportLayerLogger(s.log)),
		sipgo.WithUserAgentTransactionLayerOptions(sipmsg.WithTransactionLayerLogger(s.log)),
	)
	if err != nil {
		return fmt.Errorf("sip: user agent: %w", err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(s.log))
	if err != nil {
		ua.Close()
		return fmt.Errorf("sip: server: %w", err)
	}
	s.ua, s.srv = ua, srv
	srv.OnInvite(s.onInvite)
	srv.OnAck(s.onAck)
	srv.OnBye(s.onBye)
	srv.OnOptions(s.onOptions)
	// CANCEL is answered by the transaction layer (200, then 487 to the
	// INVITE), which ends the pending call through its dialog.
	srv.OnCancel(func(*sipmsg.Request, sipmsg.ServerTransaction) {})
	host := s.addr.Addr().String()
	// Requests this side sends (BYE) leave from the listening UDP socket
	// and over the caller's own TCP connection, to where the INVITE came
	// from: sipgo opens no sockets of its own (its own UDP ones are not
	// closed by UserAgent.Close when their reference count went wrong).
	udpClient, err := sipgo.NewClient(ua, sipgo.WithClientHostname(host), sipgo.WithClientLogger(s.log),
		sipgo.WithClientConnectionAddr(s.addr.String()))
	if err != nil {
		ua.Close()
		return fmt.Errorf("sip: client: %w", err)
	}
	tcpClient, err := sipgo.NewClient(ua, sipgo.WithClientHostname(host), sipgo.WithClientLogger(s.log))
	if err != nil {
		ua.Close()
		return fmt.Errorf("sip: client: %w", err)
	}
	s.dlgUDP = &sipgo.DialogUA{Client: udpClient, ContactHDR: s.contact("UDP"), RewriteContact: true}
	s.dlgTCP = &sipgo.DialogUA{Client: tcpClient, ContactHDR: s.contact("TCP"), RewriteContact: true}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.tcpLim = &tcpLimiter{TCPListener: s.tcp, ctx: s.ctx, idle: s.cfg.TCPIdle, perAddr: s.cfg.MaxTCPPerAddr,
		max: s.cfg.MaxTCP, inCall: s.inCall, count: &s.count, byAddr: map[netip.Addr]int{}}
	serve(&s.serving, srv, s.udp, s.tcpLim)
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := waitServing(wait, ua, s.addr); err != nil {
		s.cancel()
		s.udp.Close()
		s.tcp.Close()
		ua.Close()
		s.serving.Wait()
		return err
	}
	s.mu.Lock()
	s.unwatch = context.AfterFunc(ctx, func() { s.Close() })
	s.mu.Unlock()
	return nil
}

// Addr is the address served on both UDP and TCP.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Stats returns what the server has refused and dropped so far.
func (s *Server) Stats() Stats {
	st := s.count.stats()
	st.TCPOpen = s.tcpLim.open()
	return st
}

// Close rejects new calls (503), ends every call (Done fires with
// ErrServerClosed, answered calls get a BYE once their Handler returns),
// waits for the Handlers to return and closes the sockets. Like
// http.Server.Shutdown, it waits for Handlers, which should return when
// their ctx ends.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.unwatch()
		s.closed = true
		calls := make([]*Call, 0, len(s.active))
		for _, c := range s.active {
			calls = append(calls, c)
		}
		s.mu.Unlock()
		for _, c := range calls {
			c.end(ErrServerClosed)
		}
		s.calls.Wait()
		s.cancel()
		s.udp.Close()
		s.tcp.Close()
		s.ua.Close()
		s.serving.Wait()
	})
	return nil
}

// waitServing waits until sipgo serves the UDP socket at addr, so that
// requests can be sent from it.
func waitServing(ctx context.Context, ua *sipgo.UserAgent, addr netip.AddrPort) error {
	tick := clock.NewTicker(clock.System, time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := ua.TransportLayer().GetConnection("udp", addr.String()); err == nil && c != nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("sip: udp listener at %s not served: %w", addr, ctx.Err())
		}
	}
}

// serve runs srv on udp and tcp until they are closed, in goroutines wg
// waits for.
func serve(wg *sync.WaitGroup, srv *sipgo.Server, udp *net.UDPConn, tcp net.Listener) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = srv.ServeUDP(udp)
	}()
	go func() {
		defer wg.Done()
		_ = srv.ServeTCP(tcp)
	}()
}

func (s *Server) contact(transport string) sipmsg.ContactHeader {
	u := sipmsg.Uri{Scheme: "sip", Host: s.addr.Addr().String(), Port: int(s.addr.Port())}
	if transport == "TCP" {
		u.UriParams = sipmsg.NewParams()
		u.UriParams.Add("transport", "tcp")
	}
	return sipmsg.ContactHeader{Address: u}
}

func respond(tx sipmsg.ServerTransaction, req *sipmsg.Request, code int, reason string, hdrs ...sipmsg.Header) {
	res := sipmsg.NewResponseFromRequest(req, code, reason, nil)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	_ = tx.Respond(res)
}

// admit counts a new INVITE from src in, unless the server is closing,
// busy or full, or src has too many INVITEs not acknowledged; a refusal
// is answered 503 with Retry-After. Once admitted, the INVITE is pending
// until release.
func (s *Server) admit(src netip.Addr) (refused bool) {
	if s.cfg.Busy != nil && s.cfg.Busy() {
		s.count.refusedBusy.Add(1)
		return true
	}
	key := addrKey(src)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed, len(s.active) >= s.cfg.MaxCalls:
		s.count.refusedBusy.Add(1)
		return true
	case s.pending[key] >= s.cfg.MaxPendingPerAddr:
		s.count.refusedPending.Add(1)
		return true
	}
	s.pending[key]++
	s.calls.Add(1)
	return false
}

// release ends an admitted INVITE's pending time (its ACK, or its end).
func (s *Server) release(src netip.Addr) {
	key := addrKey(src)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[key]--; s.pending[key] <= 0 {
		delete(s.pending, key)
	}
}

// inCall reports whether a call runs over the TCP connection from remote.
func (s *Server) inCall(remote string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpCalls[remote] > 0
}

// unavailable answers 503 with the configured Retry-After.
func (s *Server) unavailable(tx sipmsg.ServerTransaction, req *sipmsg.Request) {
	respond(tx, req, sipmsg.StatusServiceUnavailable, "Service Unavailable",
		sipmsg.NewHeader("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter/time.Second))))
}

// sourceAddr is the address a request came from (invalid if unreadable).
func sourceAddr(req *sipmsg.Request) netip.AddrPort {
	ap, err := netip.ParseAddrPort(req.Source())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func (s *Server) onInvite(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	if to := req.To(); to != nil {
		if _, ok := to.Params.Get("tag"); ok {
			s.onReinvite(req, tx)
			return
		}
	}
	src := sourceAddr(req)
	if s.admit(src.Addr()) {
		s.unavailable(tx, req)
		return
	}
	defer s.calls.Done()
	var once sync.Once
	release := func() { once.Do(func() { s.release(src.Addr()) }) }
	defer release()

	var user string
	var entry User
	if s.auth != nil {
		var h string
		if a := req.GetHeader("Authorization"); a != nil {
			h = a.Value()
		}
		var err error
		user, entry, err = s.auth.verify(h, string(req.Method))
		switch {
		case errors.Is(err, errReplay):
			s.count.replays.Add(1)
			s.log.Info("sip: digest replayed", "call_id", callID(req), "source", src.String())
			fallthrough
		case errors.Is(err, errNoCredentials), errors.Is(err, errStaleNonce), errors.Is(err, errBadNonce):
			stale := errors.Is(err, errStaleNonce) || errors.Is(err, errReplay)
			respond(tx, req, sipmsg.StatusUnauthorized, "Unauthorized",
				sipmsg.NewHeader("WWW-Authenticate", s.auth.challenge(stale)))
			return
		case err != nil:
			s.log.Info("sip: authentication failed", "call_id", callID(req), "err", err)
			respond(tx, req, sipmsg.StatusForbidden, "Forbidden")
			return
		}
	}

	dlg := s.dlgUDP
	if req.Transport() == "TCP" {
		dlg = s.dlgTCP
	}
	dtx, err := dlg.ReadInvite(req, tx)
	if err != nil {
		respond(tx, req, sipmsg.StatusBadRequest, "Bad Request")
		return
	}
	c := newCall(s, req, dtx, tx, user, entry)
	c.release = release
	s.mu.Lock()
	s.active[dtx.ID] = c
	if c.Transport == "TCP" {
		s.tcpCalls[req.Source()]++
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, dtx.ID)
		if c.Transport == "TCP" {
			if s.tcpCalls[req.Source()]--; s.tcpCalls[req.Source()] <= 0 {
				delete(s.tcpCalls, req.Source())
			}
		}
		s.mu.Unlock()
	}()
	_ = tx.Respond(sipmsg.NewResponseFromRequest(req, sipmsg.StatusTrying, "Trying", nil))

	// A CANCEL, or the INVITE transaction dying, before the answer.
	stop := context.AfterFunc(dtx.Context(), func() { c.canceled() })
	defer stop()

	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		c.end(ErrServerClosed)
	}
	s.cfg.Handler.ServeSIP(c.ctx, c)
	c.finish()
}

func (s *Server) lookup(req *sipmsg.Request) *Call {
	id, err := sipmsg.DialogIDFromRequestUAS(req)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[id]
}

// onReinvite answers an INVITE inside a dialog (a session refresh or a
// hold) with the SDP already agreed; the media does not change.
func (s *Server) onReinvite(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	c := s.lookup(req)
	if c == nil {
		respond(tx, req, sipmsg.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist")
		return
	}
	answer := c.answerSDP()
	if answer == nil {
		respond(tx, req, sipmsg.StatusRequestPending, "Request Pending")
		return
	}
	res := sipmsg.NewSDPResponseFromRequest(req, answer)
	contact := s.contact(req.Transport())
	res.AppendHeader(&contact)
	capabilities(res)
	_ = tx.Respond(res)
}

func (s *Server) onAck(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	if c := s.lookup(req); c != nil {
		c.acked(req, tx)
	}
}

func (s *Server) onBye(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	c := s.lookup(req)
	if c == nil {
		respond(tx, req, sipmsg.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist")
		return
	}
	c.bye(req, tx)
}

// onOptions answers a trunk's health check: 200 with what is allowed
// while calls would be taken, and the 503 an INVITE would get otherwise,
// so that the trunk marks this route down during a drain.
func (s *Server) onOptions(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	s.mu.Lock()
	closed := s.closed || len(s.active) >= s.cfg.MaxCalls
	s.mu.Unlock()
	if closed || (s.cfg.Busy != nil && s.cfg.Busy()) {
		s.count.refusedBusy.Add(1)
		s.unavailable(tx, req)
		return
	}
	res := sipmsg.NewResponseFromRequest(req, sipmsg.StatusOK, "OK", nil)
	capabilities(res)
	res.AppendHeader(sipmsg.NewHeader("Accept", "application/sdp"))
	_ = tx.Respond(res)
}

// capabilities adds the methods and extensions this server takes (RFC
// 3261 sections 20.5 and 20.37) to a 2xx: the methods a UAS implements,
// and no option tag (no 100rel, timer or replaces), said so explicitly
// with an empty Supported.
func capabilities(res *sipmsg.Response) {
	res.AppendHeader(sipmsg.NewHeader("Allow", allowed))
	res.AppendHeader(sipmsg.NewHeader("Supported", ""))
}

func callID(req *sipmsg.Request) string {
	if h := req.CallID(); h != nil {
		return h.Value()
	}
	return ""
}
