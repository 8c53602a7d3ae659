package sip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"
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
	MaxCalls  int
	UserAgent string       // the User-Agent and Server header; default "frontdoor"
	Logger    *slog.Logger // default: discard
	Now       func() time.Time
}

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
	log    *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	serving sync.WaitGroup // the listeners' goroutines
	calls   sync.WaitGroup // the INVITE handlers

	unwatch func() bool // stops Listen's ctx from closing the server

	mu     sync.Mutex
	closed bool
	active map[string]*Call // by dialog ID
	once   sync.Once
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, active: map[string]*Call{}}
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
		if s.auth, err = newAuthenticator(cfg.Auth, cfg.Now); err != nil {
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
	serve(&s.serving, srv, s.udp, s.tcp)
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
	tick := time.NewTicker(time.Millisecond)
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
func serve(wg *sync.WaitGroup, srv *sipgo.Server, udp *net.UDPConn, tcp *net.TCPListener) {
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

// admit counts a new call in, unless the server is closed or full.
func (s *Server) admit() (code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return sipmsg.StatusServiceUnavailable
	case len(s.active) >= s.cfg.MaxCalls:
		return sipmsg.StatusServiceUnavailable
	}
	s.calls.Add(1)
	return 0
}

func (s *Server) onInvite(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	if to := req.To(); to != nil {
		if _, ok := to.Params.Get("tag"); ok {
			s.onReinvite(req, tx)
			return
		}
	}
	if code := s.admit(); code != 0 {
		respond(tx, req, code, "Service Unavailable", sipmsg.NewHeader("Retry-After", "5"))
		return
	}
	defer s.calls.Done()

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
		case errors.Is(err, errNoCredentials), errors.Is(err, errStaleNonce), errors.Is(err, errBadNonce):
			respond(tx, req, sipmsg.StatusUnauthorized, "Unauthorized",
				sipmsg.NewHeader("WWW-Authenticate", s.auth.challenge(errors.Is(err, errStaleNonce))))
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
	s.mu.Lock()
	s.active[dtx.ID] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, dtx.ID)
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

func (s *Server) onOptions(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	respond(tx, req, sipmsg.StatusOK, "OK",
		sipmsg.NewHeader("Allow", "INVITE, ACK, CANCEL, BYE, OPTIONS"),
		sipmsg.NewHeader("Accept", "application/sdp"))
}

func callID(req *sipmsg.Request) string {
	if h := req.CallID(); h != nil {
		return h.Value()
	}
	return ""
}
