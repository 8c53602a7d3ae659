package telephony

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// SIPHandler answers the calls of a media/sip server (frontdoor serve
// -sip-listen) as calls of its engine: each INVITE is answered with PCMU
// or PCMA, and the call then goes through the session stage like any
// other, over a phoneCall on a sipLine. A caller refused there hears its
// prompt (and may take the keypad menu's offer by DTMF) and is then hung
// up with a BYE: answered first, not rejected with 486 or 503, for the
// reasons media/sip's package documentation and docs/TELEPHONY.md give.
type SIPHandler struct {
	e       *session.Engine
	cfg     SIPConfig
	log     *slog.Logger
	prompts *promptCache
}

// SIPConfig configures a SIPHandler.
type SIPConfig struct {
	// MediaTimeout hangs up a call that has received no RTP at all
	// (audio, DTMF or comfort noise) from the caller for this long: a
	// caller gone without a BYE would otherwise hold its session lease for
	// good (0: 30 s). It is measured from the last packet (or the
	// answer), on the engine's clock, which should be the media/sip
	// server's Config.Now too.
	MediaTimeout time.Duration
	// Logger (nil: discard).
	Logger *slog.Logger
	// KeyWait is how long a keypad menu waits for a key once it has
	// played (0: DefaultKeyWait).
	KeyWait time.Duration
	// Prompts holds the prompt audio the handler renders itself, shared
	// with the other telephony endpoints given the same cache (nil: one
	// of its own).
	Prompts *PromptCache
	// Admit, when set, is asked for each call before it is answered, with
	// a ctx carrying the call's tenant.Caller (its tenant): the hook of
	// whoever counts a tenant's calls at once and turns across transports
	// (session/guard). It returns the ctx the call runs in (derived from
	// the one given, carrying the Caller it wants, say with AllowTurn) and
	// done, run once when the call has ended. An error refuses the call
	// before the answer, with no RTP port taken: the status of a
	// *SIPRefusal it wraps, or else 486 Busy Here (the tenant is over its
	// own cap, as HTTP's 429 says).
	Admit func(ctx context.Context) (context.Context, func(), error)
}

// SIPRefusal is an error of SIPConfig.Admit that names the SIP status the
// INVITE is refused with (say 403 or 503).
type SIPRefusal struct {
	Code   int    // 300-699
	Reason string // the reason phrase; may be empty
	Err    error  // why, for the log; may be nil
}

func (r *SIPRefusal) Error() string {
	if r.Err != nil {
		return fmt.Sprintf("sip: refused %d %s: %v", r.Code, r.Reason, r.Err)
	}
	return fmt.Sprintf("sip: refused %d %s", r.Code, r.Reason)
}

func (r *SIPRefusal) Unwrap() error { return r.Err }

// NewSIPHandler returns the SIPHandler that runs its calls on e.
func NewSIPHandler(e *session.Engine, cfg SIPConfig) *SIPHandler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MediaTimeout <= 0 {
		cfg.MediaTimeout = 30 * time.Second
	}
	return &SIPHandler{e: e, cfg: cfg, log: log, prompts: cfg.Prompts.cache()}
}

// ServeSIP implements sip.Handler: it answers the call, serves it on the
// engine until it ends (session.Engine.Run), and returns; media/sip then
// sends the BYE if the call has not ended otherwise. The call's tenant is
// the one media/sip read (the request URI's user, or the authenticated
// user's); the caller's number, for a keypad callback, is the From user
// when it is an E.164 number.
func (h *SIPHandler) ServeSIP(ctx context.Context, c *sip.Call) {
	log := h.log.With("sip_call", c.CallID, "transport", c.Transport)
	ctx = tenant.WithCaller(ctx, tenant.Caller{Tenant: c.Tenant, Source: tenant.SourceOf(c.Source.String())})
	if h.cfg.Admit != nil {
		actx, done, err := h.cfg.Admit(ctx)
		if err != nil {
			code, reason := 486, "Busy Here"
			if r, ok := errors.AsType[*SIPRefusal](err); ok && r.Code >= 300 && r.Code <= 699 {
				code, reason = r.Code, r.Reason
			}
			log.Info("sip: refused before the answer", "tenant", c.Tenant, "status", code, "err", err)
			_ = c.Reject(code, reason)
			return
		}
		defer done()
		ctx = actx
	}
	m, err := c.Answer(ctx)
	if err != nil {
		log.Info("sip: not answered", "err", err)
		return
	}
	format := media.Telephony
	if m.Codec().Name == sip.PCMA.Name {
		format.Encoding = media.Alaw
	}
	// The silence timer runs on the engine's clock from the answer on, so
	// that a test's manual clock decides when a silent caller is hung up.
	clk := h.e.Clock()
	l := &sipLine{call: c, media: m, track: gateway.NewTracker(clk), timeout: h.cfg.MediaTimeout,
		clock: clk, since: clk.Now(), timer: clock.NewTimer(clk, h.cfg.MediaTimeout)}
	defer l.timer.Stop()
	st := lineStart{name: "sip", protocol: "sip", params: map[string]string{callerParam: c.From.User}, format: format, keyWait: h.cfg.KeyWait}
	t := newPhoneCall(h.e, l, st, h.prompts, log)
	log.Info("sip: call answered", "tenant", c.Tenant, "user", c.User, "codec", m.Codec().Name, "media", m.String())
	h.e.Run(ctx, t, sipCapabilities(t.capabilities()))
	t.wait()
	l.wait()
	log.Info("sip: call ended", "err", c.Err())
}

// sipCapabilities are a phone call's, without a handoff on the keypad:
// frontdoor cannot transfer a SIP call to the person who takes it (it
// sends no REFER), so a refused SIP caller is offered a callback alone.
func sipCapabilities(caps session.Capabilities) session.Capabilities {
	keypad := caps.Keypad
	caps.Keypad = func(offered []string) []string {
		kinds := make([]string, 0, len(offered))
		for _, k := range offered {
			if k != string(prompt.KindHandoff) {
				kinds = append(kinds, k)
			}
		}
		return keypad(kinds)
	}
	return caps
}

// errNoMedia ends a call whose caller has sent no RTP for the media
// timeout.
var errNoMedia = errors.New("sip: no RTP from the caller")

// sipLine is an answered SIP call as a line. Its audio is the call's codec
// (µ-law or A-law, 8 kHz), paced by the call's RTP sender, which plays in
// real time from the moment audio is queued; so the tracker's playback
// clock is the sender's, and an utterance has played once its last packet
// is sent (the phone's jitter buffer adds some 20-100 ms the line cannot
// see).
type sipLine struct {
	call    *sip.Call
	media   *sip.Media
	track   *gateway.Tracker
	timeout time.Duration

	stopped bool             // the reader's: the caller's BYE was reported
	clock   clock.Clock      // the engine's
	since   time.Time        // the answer: the silence counts from it before any RTP
	timer   *clock.ChanTimer // on the engine's clock; armed at the answer

	drains sync.WaitGroup // one per ended utterance, until it is sent or cleared
}

func (l *sipLine) read(ctx context.Context) (lineEvent, error) {
	for {
		if l.stopped {
			return lineEvent{}, io.EOF
		}
		select {
		case f, ok := <-l.media.Frames():
			if !ok {
				return l.ended()
			}
			return lineEvent{kind: lineMedia, audio: f.Payload}, nil
		case d, ok := <-l.media.Digits():
			if !ok {
				return l.ended()
			}
			return lineEvent{kind: lineDTMF, digit: string(d)}, nil
		case <-l.timer.C:
			// Rearmed for what is left from the last packet heard, so the
			// hang-up comes at the timeout after it, not up to a whole
			// timeout later.
			last := l.media.LastHeard()
			if last.Before(l.since) {
				last = l.since
			}
			if left := last.Add(l.timeout).Sub(l.clock.Now()); left > 0 {
				l.timer.Reset(left)
				continue
			}
			return lineEvent{}, errNoMedia
		case <-ctx.Done():
			return lineEvent{}, ctx.Err()
		}
	}
}

// ended is the read of a call whose media has stopped: the caller's BYE
// is a hang-up, reported once; any other end is the error that ended it.
func (l *sipLine) ended() (lineEvent, error) {
	<-l.call.Done() // the media stops only as the call ends
	l.timer.Stop()
	if errors.Is(l.call.Err(), sip.ErrRemoteHangup) && !l.stopped {
		l.stopped = true
		return lineEvent{kind: lineStop}, nil
	}
	l.stopped = true
	return lineEvent{}, l.call.Err()
}

func (l *sipLine) sendAudio(utt string, b []byte) error {
	l.track.Sent(utt, media.Telephony.Duration(len(b)))
	return l.media.Write(b)
}

// endUtterance marks the end of the utterance's audio in the sender's
// queue (Media.Flush) and waits, in a goroutine of the line's, for it to
// be sent or cleared; the utterance then counts as played, as it would
// when its mark is echoed on a gateway with marks.
func (l *sipLine) endUtterance(utt string) {
	name := l.track.Mark(utt, true)
	sent := l.media.Flush()
	l.drains.Go(func() {
		<-sent // closed when sent, cleared or the call ends
		l.track.Echo(name)
	})
}

func (l *sipLine) clear(context.Context) ([]gateway.Progress, error) {
	progress := l.track.Clear()
	l.media.Clear()
	return progress, nil
}

func (l *sipLine) tracker() *gateway.Tracker { return l.track }
func (l *sipLine) buffered() time.Duration   { return l.media.Buffered() }
func (l *sipLine) lead() time.Duration       { return pcmu.Lead } // 20 ms frames
func (l *sipLine) played(utt string) bool    { return l.track.Progress(utt).Done }

// hangup sends the BYE (bounded by media/sip: 5 s for its answer); a call
// the caller ended is not hung up again. There is no transfer: the keypad
// offers no handoff (sipCapabilities).
func (l *sipLine) hangup(wire.CloseStatus, string, bool) {
	_ = l.call.Hangup(context.Background())
}

// wait waits for the line's goroutines, which end with the call's media.
func (l *sipLine) wait() { l.drains.Wait() }
