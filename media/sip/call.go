package sip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"regexp"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Why a call ended, as Call.Err reports it.
var (
	// ErrCanceled: the caller sent CANCEL (or its INVITE transaction died)
	// before the call was answered.
	ErrCanceled = errors.New("sip: caller canceled")
	// ErrRemoteHangup: the far end sent BYE (the caller, for a Call).
	ErrRemoteHangup = errors.New("sip: far end hung up")
	// ErrHungUp: Hangup was called (this side sent BYE).
	ErrHungUp = errors.New("sip: hung up")
	// ErrRejected: Reject was called, or the Handler returned without answering.
	ErrRejected = errors.New("sip: call rejected")
	// ErrNoACK: the caller never acknowledged the answer (RFC 3261 section
	// 13.3.1.4: 64·T1, 32 s); the call is hung up.
	ErrNoACK = errors.New("sip: answer not acknowledged")
	// ErrNotAcceptable: the offer had no usable audio stream or codec; the
	// caller got 488.
	ErrNotAcceptable = errors.New("sip: offer not acceptable")
)

// ErrCallState reports Answer, Reject or Ringing on a call that is no
// longer ringing; when the call has ended, the error also wraps its Err.
var ErrCallState = errors.New("sip: call not ringing")

// Address is a From or To header.
type Address struct {
	Display string // the display name, may be empty
	URI     string // sip:alice@example.com
	User    string // alice
	Host    string // example.com
}

func addressOf(display string, u sipmsg.Uri) Address {
	return Address{Display: display, URI: u.String(), User: u.User, Host: u.Host}
}

// Call is one incoming call, from its INVITE to its end.
type Call struct {
	RequestURI string  // the INVITE's request URI
	From, To   Address // the INVITE's From and To
	CallID     string
	// Tenant is the tenant Config.Tenant names, or "" when that is missing
	// or not 1-64 characters of letters, digits, '+', '.', '_' and '-'.
	Tenant string
	// User is the authenticated user name; "" without Config.Auth.
	User      string
	Transport string         // "UDP" or "TCP"
	Source    netip.AddrPort // where the INVITE came from

	srv     *Server
	dtx     *sipgo.DialogServerSession
	tx      sipmsg.ServerTransaction
	ctx     context.Context
	stop    context.CancelFunc
	ack     chan struct{}
	release func() // ends the INVITE's pending time at the server (its ACK)

	mu       sync.Mutex
	state    callState
	media    *Media
	answer   []byte
	byeSent  bool
	err      error
	done     chan struct{}
	ackOnce  sync.Once
	endOnce  sync.Once
	answered bool
}

type callState int

const (
	ringing callState = iota
	answered
	ended
)

var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9+._-]{1,64}$`)

// ValidTenant reports whether s can be a call's Tenant: 1-64 characters of
// letters, digits, '+', '.', '_' and '-'.
func ValidTenant(s string) bool { return tenantPattern.MatchString(s) }

func newCall(s *Server, req *sipmsg.Request, dtx *sipgo.DialogServerSession, tx sipmsg.ServerTransaction, user string, entry User) *Call {
	c := &Call{
		RequestURI: req.Recipient.String(),
		CallID:     callID(req),
		User:       user,
		Transport:  req.Transport(),
		srv:        s,
		dtx:        dtx,
		tx:         tx,
		ack:        make(chan struct{}),
		done:       make(chan struct{}),
	}
	if src, err := netip.ParseAddrPort(req.Source()); err == nil {
		c.Source = src
	}
	if f := req.From(); f != nil {
		c.From = addressOf(f.DisplayName, f.Address)
	}
	if t := req.To(); t != nil {
		c.To = addressOf(t.DisplayName, t.Address)
	}
	var tenant string
	switch s.cfg.Tenant {
	case TenantFromRequestURI:
		tenant = req.Recipient.User
	case TenantFromUser:
		tenant = entry.Tenant
	case TenantFromUserOrRequestURI:
		tenant = entry.Tenant
		if tenant == "" {
			tenant = req.Recipient.User
		}
	case TenantFromHeader:
		if h := req.GetHeader(s.cfg.TenantHeader); h != nil {
			tenant = h.Value()
		}
	}
	if ValidTenant(tenant) {
		c.Tenant = tenant
	}
	c.ctx, c.stop = context.WithCancel(s.ctx)
	return c
}

// Done is closed when the call ends; Err then says why.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err is nil while the call lasts, then one of ErrCanceled, ErrRemoteHangup,
// ErrHungUp, ErrRejected, ErrNoACK, ErrNotAcceptable or ErrServerClosed
// (possibly wrapped).
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Media is the call's RTP once answered, nil before.
func (c *Call) Media() *Media {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.media
}

// Ringing sends 180 Ringing while the Handler decides.
func (c *Call) Ringing() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != ringing {
		return c.stateErr()
	}
	return c.respond(sipmsg.NewResponseFromRequest(c.dtx.InviteRequest, sipmsg.StatusRinging, "Ringing", nil))
}

// stateErr is ErrCallState, with the reason the call ended if it has;
// c.mu is held.
func (c *Call) stateErr() error {
	if c.err != nil {
		return fmt.Errorf("%w: %w", ErrCallState, c.err)
	}
	return ErrCallState
}

func (c *Call) respond(res *sipmsg.Response) error {
	contact := c.srv.contact(c.Transport)
	res.AppendHeader(&contact)
	if err := c.tx.Respond(res); err != nil {
		return fmt.Errorf("sip: respond %d: %w", res.StatusCode, err)
	}
	return nil
}

// Reject refuses a ringing call with a final status (300-699, say 486 Busy
// Here or 603 Decline); the call ends with ErrRejected. reason may be empty.
func (c *Call) Reject(code int, reason string) error {
	if code < 300 || code > 699 {
		return fmt.Errorf("sip: reject status %d is not a final failure (300-699)", code)
	}
	if reason == "" {
		reason = "Rejected"
	}
	c.mu.Lock()
	if c.state != ringing {
		defer c.mu.Unlock()
		return c.stateErr()
	}
	err := c.respond(sipmsg.NewResponseFromRequest(c.dtx.InviteRequest, code, reason, nil))
	c.mu.Unlock()
	c.end(fmt.Errorf("%w: %d %s", ErrRejected, code, reason))
	return err
}

// Answer accepts a ringing call: it chooses the first of Config.Codecs the
// offer carries, answers 200 OK with its SDP (the codec, and RFC 4733
// telephone-event when offered) and starts RTP both ways. It returns once
// the caller acknowledged (ACK), or with the error that ended the call. An
// offer with no usable audio is answered 488 and ends the call
// (ErrNotAcceptable, wrapping ErrNoOffer, ErrBadSDP or ErrNoCodec).
func (c *Call) Answer(ctx context.Context) (*Media, error) {
	c.mu.Lock()
	if c.state != ringing {
		defer c.mu.Unlock()
		return nil, c.stateErr()
	}
	offer, err := parseSDP(c.dtx.InviteRequest.Body())
	var codec Codec
	if err == nil {
		codec, err = offer.choose(c.srv.cfg.Codecs)
	}
	if err != nil {
		_ = c.respond(sipmsg.NewResponseFromRequest(c.dtx.InviteRequest, sipmsg.StatusNotAcceptableHere, "Not Acceptable Here", nil))
		c.mu.Unlock()
		err = fmt.Errorf("%w: %w", ErrNotAcceptable, err)
		c.end(err)
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(c.srv.cfg.MediaIP, 0)))
	if err != nil {
		c.mu.Unlock()
		err = fmt.Errorf("sip: rtp socket: %w", err)
		_ = c.Reject(sipmsg.StatusInternalServerError, "Media Unavailable")
		return nil, err
	}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	sdp := describe(rand.Uint64()>>1, netip.AddrPortFrom(c.srv.cfg.MediaIP, local.Port()), []Codec{codec}, offer.EventPT)
	res := sipmsg.NewSDPResponseFromRequest(c.dtx.InviteRequest, sdp)
	contact := c.srv.contact(c.Transport)
	res.AppendHeader(&contact)
	capabilities(res)
	c.dtx.InviteResponse = res // for the BYE sipgo builds on Hangup
	if err := c.tx.Respond(res); err != nil {
		c.mu.Unlock()
		conn.Close()
		c.end(ErrCanceled)
		return nil, fmt.Errorf("sip: answer: %w (%w)", err, ErrCanceled)
	}
	c.state, c.answered, c.answer = answered, true, sdp
	c.media = newMedia(conn, offer.Addr, codec, offer.EventPT, mediaPeer{
		signal: c.Source.Addr(), now: c.srv.cfg.Clock.Now, count: &c.srv.count,
	}, c.srv.log.With("call_id", c.CallID))
	m := c.media
	c.mu.Unlock()

	// The answer is retransmitted until the ACK (RFC 3261 section 13.3.1.4).
	wait := sipmsg.T1
	timer := clock.NewTimer(clock.System, wait)
	defer timer.Stop()
	deadline := clock.NewTimer(clock.System, 64*sipmsg.T1)
	defer deadline.Stop()
	for {
		select {
		case <-c.ack:
			return m, nil
		case <-c.done:
			return nil, c.Err()
		case <-ctx.Done():
			c.hangup(context.WithoutCancel(ctx), ctx.Err())
			return nil, ctx.Err()
		case <-deadline.C:
			c.hangup(c.ctx, ErrNoACK)
			return nil, ErrNoACK
		case <-timer.C:
			_ = c.tx.Respond(res)
			wait = min(2*wait, sipmsg.T2)
			timer.Reset(wait)
		}
	}
}

func (c *Call) answerSDP() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != answered {
		return nil
	}
	return c.answer
}

// byeTimeout bounds the wait for the answer to a BYE.
const byeTimeout = 5 * time.Second

// Hangup ends the call from this side: an answered call gets a BYE (its RTP
// stops first), a ringing one is rejected with 480. The call ends with
// ErrHungUp. It waits at most 5 s for the BYE's answer, whatever ctx says:
// the call's own ctx ends as it hangs up. Hanging up a call that has ended
// does nothing.
func (c *Call) Hangup(ctx context.Context) error {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch st {
	case ringing:
		if err := c.Reject(sipmsg.StatusTemporarilyUnavailable, "Temporarily Unavailable"); err != nil && !errors.Is(err, ErrCallState) {
			return err
		}
		return nil
	case answered:
		return c.hangup(ctx, ErrHungUp)
	}
	return nil
}

// hangup ends an answered call with cause and sends its BYE once.
func (c *Call) hangup(ctx context.Context, cause error) error {
	c.mu.Lock()
	send := c.answered && !c.byeSent
	c.byeSent = true
	c.mu.Unlock()
	c.end(cause)
	if !send {
		return nil
	}
	// Ending the call ended the Handler's ctx, which is often this one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), byeTimeout)
	defer cancel()
	if err := c.dtx.Bye(ctx); err != nil {
		return fmt.Errorf("sip: bye: %w", err)
	}
	return nil
}

// end ends the call once with cause: Done closes, the Handler's ctx ends
// and RTP stops.
func (c *Call) end(cause error) {
	c.endOnce.Do(func() {
		c.mu.Lock()
		c.state, c.err = ended, cause
		m := c.media
		c.mu.Unlock()
		close(c.done)
		c.stop()
		if m != nil {
			m.close()
		}
	})
}

// canceled runs when the INVITE's dialog context ends: a CANCEL or the
// transaction's end. It only ends a call not yet answered.
func (c *Call) canceled() {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	if st == ringing {
		c.end(ErrCanceled)
	}
}

func (c *Call) acked(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	_ = c.dtx.ReadAck(req, tx)
	c.ackOnce.Do(func() {
		if c.release != nil {
			c.release()
		}
		close(c.ack)
	})
}

func (c *Call) bye(req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	c.mu.Lock()
	c.byeSent = true // a BYE crossed ours or came first: send none
	c.mu.Unlock()
	// The 200 leaves before the call ends: ending it may end the last
	// call of a drain, whose process then closes the socket at once, and
	// a BYE left unanswered is retransmitted for 32 s (Timer B).
	if err := c.dtx.ReadBye(req, tx); err != nil {
		respond(tx, req, sipmsg.StatusBadRequest, "Bad Request")
	}
	c.end(ErrRemoteHangup)
}

// finish runs when the Handler returned.
func (c *Call) finish() {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch st {
	case ringing:
		_ = c.Reject(sipmsg.StatusTemporarilyUnavailable, "Temporarily Unavailable")
	default:
		_ = c.hangup(context.Background(), ErrHungUp)
	}
}
