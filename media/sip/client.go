package sip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// DialConfig configures Dial, the client side: synthetic calls for tests
// and load runs.
type DialConfig struct {
	From     string // From's user part; default "frontdoor"
	Username string // digest credentials, answered to a 401 or 407
	Password string
	// LocalIP is the address SIP and RTP are bound to; default the one the
	// system routes to the target from.
	LocalIP netip.Addr
	Codecs  []Codec     // offered in order; default PCMU then PCMA
	Header  [][2]string // extra INVITE headers, name and value
	// OfferAddr, when set, is the RTP address the offer names instead of
	// the call's own socket (which still sends and receives): for tests
	// of a server that must send nothing to an address that never asked.
	OfferAddr netip.AddrPort
	Logger    *slog.Logger
}

// Outgoing is a call placed by Dial. Its Media is running when Dial
// returns. Close (or Hangup) must be called to release its sockets.
type Outgoing struct {
	*Media
	CallID string

	ua      *sipgo.UserAgent
	dialog  *sipgo.DialogClientSession
	udp     *net.UDPConn
	tcp     *net.TCPListener
	serving sync.WaitGroup

	mu        sync.Mutex
	err       error
	done      chan struct{}
	endOnce   sync.Once
	closeOnce sync.Once
}

// Dial places a call to uri (sip:acme@127.0.0.1:5060, with ;transport=tcp
// for TCP), offering the codecs and telephone-event, answers a digest
// challenge with the configured credentials, and returns once the call is
// answered and acknowledged. Canceling ctx before the answer sends CANCEL.
// A refusal is an error wrapping ErrRefused with the status.
func Dial(ctx context.Context, uri string, cfg DialConfig) (*Outgoing, error) {
	var target sipmsg.Uri
	if err := sipmsg.ParseUri(uri, &target); err != nil {
		return nil, fmt.Errorf("sip: dial %q: %w", uri, err)
	}
	transport := "UDP"
	if target.UriParams != nil {
		if tp, ok := target.UriParams.Get("transport"); ok {
			transport = strings.ToUpper(tp)
		}
	}
	if transport != "UDP" && transport != "TCP" {
		return nil, fmt.Errorf("sip: dial %q: transport %s not supported", uri, transport)
	}
	if cfg.From == "" {
		cfg.From = "frontdoor"
	}
	if len(cfg.Codecs) == 0 {
		cfg.Codecs = []Codec{PCMU, PCMA}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if !cfg.LocalIP.IsValid() {
		ip, err := routeTo(target)
		if err != nil {
			return nil, err
		}
		cfg.LocalIP = ip
	}
	o := &Outgoing{done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			o.Close()
		}
	}()
	var err error
	if o.udp, o.tcp, _, err = bindPair(netip.AddrPortFrom(cfg.LocalIP, 0)); err != nil {
		return nil, err
	}
	local := o.udp.LocalAddr().(*net.UDPAddr).AddrPort()
	rtpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(cfg.LocalIP, 0)))
	if err != nil {
		return nil, fmt.Errorf("sip: rtp socket: %w", err)
	}
	rtpAddr := rtpConn.LocalAddr().(*net.UDPAddr).AddrPort()

	if o.ua, err = sipgo.NewUA(
		sipgo.WithUserAgent("frontdoor"),
		sipgo.WithUserAgentHostname(cfg.LocalIP.String()),
		sipgo.WithUserAgentTransportLayerOptions(sipmsg.WithTransportLayerLogger(cfg.Logger)),
		sipgo.WithUserAgentTransactionLayerOptions(sipmsg.WithTransactionLayerLogger(cfg.Logger)),
	); err != nil {
		rtpConn.Close()
		return nil, fmt.Errorf("sip: user agent: %w", err)
	}
	srv, err := sipgo.NewServer(o.ua, sipgo.WithServerLogger(cfg.Logger))
	if err == nil {
		srv.OnBye(o.onBye)
		serve(&o.serving, srv, o.udp, o.tcp)
		opts := []sipgo.ClientOption{sipgo.WithClientHostname(cfg.LocalIP.String()), sipgo.WithClientLogger(cfg.Logger)}
		if transport == "UDP" {
			// Send from the listening socket, so that sipgo opens none of
			// its own; it serves requests from it once registered.
			if err = waitServing(ctx, o.ua, local); err == nil {
				opts = append(opts, sipgo.WithClientConnectionAddr(local.String()))
			}
		} else {
			// The TCP connection leaves from LocalIP too (any port), as
			// the Via and Contact say.
			opts = append(opts, sipgo.WithClientConnectionAddr(netip.AddrPortFrom(cfg.LocalIP, 0).String()))
		}
		var client *sipgo.Client
		if err == nil {
			client, err = sipgo.NewClient(o.ua, opts...)
		}
		if err == nil {
			contact := sipmsg.ContactHeader{Address: sipmsg.Uri{Scheme: "sip", User: cfg.From, Host: cfg.LocalIP.String(), Port: int(local.Port())}}
			if transport == "TCP" {
				contact.Address.UriParams = sipmsg.NewParams()
				contact.Address.UriParams.Add("transport", "tcp")
			}
			dlgUA := &sipgo.DialogUA{Client: client, ContactHDR: contact}
			err = o.invite(ctx, dlgUA, target, transport, cfg, rtpConn, rtpAddr)
		}
	}
	if err != nil {
		rtpConn.Close()
		return nil, err
	}
	ok = true
	return o, nil
}

// cancelGrace bounds the wait for a provisional response once a Dial's
// ctx has ended (2·T1).
var cancelGrace = 2 * sipmsg.T1

// ErrRefused reports a call that got a final failure response; the error
// names the status.
var ErrRefused = errors.New("sip: call refused")

func (o *Outgoing) invite(ctx context.Context, dlgUA *sipgo.DialogUA, target sipmsg.Uri, transport string, cfg DialConfig, rtpConn *net.UDPConn, rtpAddr netip.AddrPort) error {
	req := sipmsg.NewRequest(sipmsg.INVITE, target)
	req.SetTransport(transport)
	from := &sipmsg.FromHeader{
		Address: sipmsg.Uri{Scheme: "sip", User: cfg.From, Host: cfg.LocalIP.String()},
		Params:  sipmsg.NewParams(),
	}
	from.Params.Add("tag", sipmsg.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sipmsg.ToHeader{Address: target, Params: sipmsg.NewParams()})
	for _, h := range cfg.Header {
		req.AppendHeader(sipmsg.NewHeader(h[0], h[1]))
	}
	req.AppendHeader(sipmsg.NewHeader("Content-Type", "application/sdp"))
	offer := rtpAddr
	if cfg.OfferAddr.IsValid() {
		offer = cfg.OfferAddr
	}
	req.SetBody(describe(rand.Uint64()>>1, offer, cfg.Codecs, 101))

	d, err := dlgUA.WriteInvite(ctx, req)
	if err != nil {
		return fmt.Errorf("sip: invite: %w", err)
	}
	o.mu.Lock()
	o.dialog = d
	o.mu.Unlock()
	if h := req.CallID(); h != nil {
		o.CallID = h.Value()
	}
	// A ctx that ends sends CANCEL, which RFC 3261 allows only once a
	// provisional response came; sipgo then waits for one as long as the
	// INVITE transaction lasts (32 s). So a Dial whose ctx ends waits for
	// a provisional response at most cancelGrace more, and otherwise
	// gives up without a CANCEL: the far end has answered nothing.
	provisional := make(chan struct{})
	var once sync.Once
	wctx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	unwatch := context.AfterFunc(ctx, func() {
		t := clock.NewTimer(clock.System, cancelGrace)
		defer t.Stop()
		select {
		case <-provisional:
			stop(ctx.Err())
		case <-t.C:
			stop(sipgo.WaitAnswerForceCancelErr)
		}
	})
	defer unwatch()
	err = d.WaitAnswer(wctx, sipgo.AnswerOptions{Username: cfg.Username, Password: cfg.Password,
		OnResponse: func(res *sipmsg.Response) error {
			if res.IsProvisional() {
				once.Do(func() { close(provisional) })
			}
			return nil
		}})
	if err != nil {
		var refused *sipgo.ErrDialogResponse
		if errors.As(err, &refused) {
			return fmt.Errorf("%w: %d %s", ErrRefused, refused.Res.StatusCode, refused.Res.Reason)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sip: invite: %w", ctx.Err())
		}
		return fmt.Errorf("sip: invite: %w", err)
	}
	answer, err := parseSDP(d.InviteResponse.Body())
	if err != nil {
		_ = d.Ack(ctx)
		_ = d.Bye(ctx)
		return fmt.Errorf("sip: answer: %w", err)
	}
	codec, err := answer.choose(cfg.Codecs)
	if err != nil {
		_ = d.Ack(ctx)
		_ = d.Bye(ctx)
		return fmt.Errorf("sip: answer: %w", err)
	}
	if err := d.Ack(ctx); err != nil {
		return fmt.Errorf("sip: ack: %w", err)
	}
	// The server called is trusted with RTP from the start: the caller
	// chose it.
	m := newMedia(rtpConn, answer.Addr, codec, answer.EventPT, mediaPeer{trusted: true}, cfg.Logger)
	o.mu.Lock()
	o.Media = m
	o.mu.Unlock()
	return nil
}

func (o *Outgoing) onBye(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	o.mu.Lock()
	d := o.dialog
	o.mu.Unlock()
	if d == nil || callID(req) != o.CallID {
		respond(tx, req, sipmsg.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist")
		return
	}
	_ = d.ReadBye(req, tx)
	o.end(ErrRemoteHangup)
}

func (o *Outgoing) end(cause error) {
	o.endOnce.Do(func() {
		o.mu.Lock()
		o.err = cause
		m := o.Media
		o.mu.Unlock()
		close(o.done)
		if m != nil {
			m.close()
		}
	})
}

// Done is closed when the call ends: the far end's BYE, Hangup or Close.
func (o *Outgoing) Done() <-chan struct{} { return o.done }

// Err says why the call ended (ErrRemoteHangup, ErrHungUp), nil before.
func (o *Outgoing) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Hangup sends BYE (unless the far end hung up first) and closes the call.
func (o *Outgoing) Hangup(ctx context.Context) error {
	select {
	case <-o.done:
		return o.Close()
	default:
	}
	o.end(ErrHungUp)
	err := o.dialog.Bye(ctx)
	o.Close()
	if err != nil {
		return fmt.Errorf("sip: bye: %w", err)
	}
	return nil
}

// Close releases the call's sockets and goroutines without a BYE.
func (o *Outgoing) Close() error {
	o.closeOnce.Do(func() {
		o.end(ErrHungUp)
		if o.ua != nil {
			o.ua.Close()
		}
		if o.udp != nil {
			o.udp.Close()
		}
		if o.tcp != nil {
			o.tcp.Close()
		}
		o.serving.Wait()
	})
	return nil
}

// routeTo is the local IP the system would send to target from.
func routeTo(target sipmsg.Uri) (netip.Addr, error) {
	port := target.Port
	if port == 0 {
		port = 5060
	}
	c, err := net.Dial("udp", net.JoinHostPort(target.Host, fmt.Sprint(port)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("sip: no route to %s: %w", target.Host, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}
