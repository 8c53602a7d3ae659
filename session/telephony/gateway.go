package telephony

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/asterisk"
	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
	"github.com/frontdoorhq/frontdoor/media/gateway/exotel"
	"github.com/frontdoorhq/frontdoor/media/gateway/freeswitch"
	"github.com/frontdoorhq/frontdoor/media/gateway/jambonz"
	"github.com/frontdoorhq/frontdoor/media/gateway/plivo"
	"github.com/frontdoorhq/frontdoor/media/gateway/vonage"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/heartbeat"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// GatewayDialects are the WebSocket dialects a GatewayHandler serves, each
// on GET /v1/<dialect> (docs/TELEPHONY.md). AudioSocket, on TCP, is served
// by ServeAudioSocket.
var GatewayDialects = []string{"plivo", "exotel", "vonage", "asterisk", "freeswitch", "jambonz"}

// GatewaySubprotocols returns the WebSocket subprotocols the gateway of
// dialect offers, as its documentation shows, in the order the endpoint
// prefers them: jambonz's listen verb offers only "audio.jambonz.org";
// Asterisk's websocket client sends what its protocols setting names, and
// Asterisk's page sets it to "media"; FreeSWITCH's mod_audio_fork offers
// "audio.drachtio.org" (mod_audio_stream none). The others offer none. A route
// answers one of these when offered (session/server's route table declares
// them to the guard in front); required says the dialect's gateway always
// offers one, so an upgrade without it is not that gateway.
func GatewaySubprotocols(dialect string) (protocols []string, required bool) {
	switch dialect {
	case "jambonz":
		return []string{jambonz.Subprotocol}, true
	case "asterisk":
		return []string{asterisk.Subprotocol}, false
	case "freeswitch":
		// mod_audio_fork offers its own; mod_audio_stream none.
		return []string{freeswitch.Subprotocol}, false
	}
	return nil, false
}

// ErrGatewayToken: a gateway stream without the configured secret.
var ErrGatewayToken = errors.New("telephony: the gateway did not present the configured token")

// GatewayConfig configures a GatewayHandler.
type GatewayConfig struct {
	// Token, when set, is a secret the gateway must present: as the
	// password of HTTP Basic authentication or a Bearer token on the
	// upgrade, or as the start parameter "token" (a custom parameter,
	// extra header or metadata field, whichever the dialect carries).
	// Streams without it are closed (1008) before they ask for admission.
	// With it, the start parameter "tenant" names the call's tenant (its
	// jobs take that tenant's share of each stage's queue).
	Token string
	// StartTimeout bounds the wait for the stream's start (0: 10s).
	StartTimeout time.Duration
	// AudioSocketTenant is the tenant of AudioSocket calls whose context
	// names none (AudioSocket carries no parameters): the listener's
	// tenant, whose caps they count against ("": none).
	AudioSocketTenant string
	// AudioSocketIdle is how long an AudioSocket peer may send nothing
	// before its connection is closed (0: heartbeat.Default's
	// bound, 25 s, the bound the WebSocket transports' pings keep).
	AudioSocketIdle time.Duration
	// OriginPatterns are the cross-origin hosts allowed to open the
	// WebSocket; same-origin always is.
	OriginPatterns []string
	// Logger (nil: discard).
	Logger *slog.Logger
	// KeyWait is how long a keypad menu waits for a key once it has
	// played (0: DefaultKeyWait).
	KeyWait time.Duration
	// Prompts holds the prompt audio the endpoint renders itself, shared
	// with the other telephony endpoints given the same cache (nil: one of
	// its own).
	Prompts *PromptCache
}

// GatewayHandler serves one media/gateway dialect: every call on it runs
// the same phoneCall as Twilio's, over a gatewayLine. A dialect is its
// codec and capabilities, not a transport of its own.
type GatewayHandler struct {
	e       *session.Engine
	dialect string
	codec   func(url.Values) (gateway.Codec, error)
	cfg     GatewayConfig
	log     *slog.Logger
	prompts *promptCache
}

// dialectCodecs returns each dialect's codec for a stream URL's query:
// Asterisk's control format (?control=json; plain text otherwise, the
// driver's default), Exotel's sample rate (?sample-rate=16000, as
// Exotel's applet is configured) and mod_audio_stream's sampling rate and
// playback (?rate=16000, ?binary=1), which their sockets do not announce.
var dialectCodecs = map[string]func(url.Values) (gateway.Codec, error){
	"plivo": func(url.Values) (gateway.Codec, error) { return plivo.Codec{}, nil },
	"exotel": func(q url.Values) (gateway.Codec, error) {
		// Exotel's applet is told its rate by the URL's sample-rate.
		rate, err := exotel.ParseSampleRate(q.Get("sample-rate"))
		return exotel.Codec{SampleRate: rate}, err
	},
	"vonage": func(url.Values) (gateway.Codec, error) { return vonage.Codec{}, nil },
	"asterisk": func(q url.Values) (gateway.Codec, error) {
		if q.Get("control") == "json" {
			return asterisk.Codec{Control: asterisk.JSON}, nil
		}
		return asterisk.Codec{Control: asterisk.PlainText}, nil
	},
	"freeswitch": func(q url.Values) (gateway.Codec, error) {
		c := freeswitch.Codec{Binary: q.Get("binary") == "1"}
		switch r := q.Get("rate"); r {
		case "", "8000", "8k":
			c.SampleRate = 8000
		case "16000", "16k":
			c.SampleRate = 16000
		default:
			return nil, fmt.Errorf("telephony: freeswitch: rate %q, want 8000 or 16000", r)
		}
		return c, nil
	},
	"jambonz": func(url.Values) (gateway.Codec, error) { return jambonz.Codec{}, nil },
}

// NewGatewayHandler returns the handler of dialect (one of
// GatewayDialects) that starts its calls on e.
func NewGatewayHandler(e *session.Engine, dialect string, cfg GatewayConfig) (*GatewayHandler, error) {
	codec, ok := dialectCodecs[dialect]
	if !ok {
		return nil, fmt.Errorf("telephony: no gateway dialect %q", dialect)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &GatewayHandler{e: e, dialect: dialect, codec: codec, cfg: cfg, log: log.With("dialect", dialect), prompts: cfg.Prompts.cache()}, nil
}

// ServeHTTP serves one stream; it returns when its call has ended.
func (h *GatewayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	codec, err := h.codec(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	protocols, required := GatewaySubprotocols(h.dialect)
	opts := &websocket.AcceptOptions{OriginPatterns: h.cfg.OriginPatterns, Subprotocols: protocols}
	ws, err := websocket.Accept(w, r, opts)
	if err != nil {
		h.log.Debug(h.dialect+": accept", "err", err)
		return
	}
	if required && ws.Subprotocol() == "" {
		// coder/websocket accepts the empty subprotocol: this gateway always asks for its own.
		_ = ws.Close(websocket.StatusPolicyViolation, "subprotocol "+strings.Join(protocols, " or ")+" required")
		return
	}
	if fs, ok := codec.(freeswitch.Codec); ok && ws.Subprotocol() == freeswitch.Subprotocol {
		// The module that offers it is mod_audio_fork, which plays what it is sent.
		fs.Fork = true
		codec = fs
	}
	link := gateway.NewWebSocketLink(ws, codec.Capabilities().MaxMessage)
	closeWith := func(code websocket.StatusCode, reason string) { _ = ws.Close(code, reason) }
	h.serve(r.Context(), link, codec, h.upgradeToken(r), closeWith, ws, tenant.SourceOf(r.RemoteAddr))
}

// ServeAudioSocket serves one AudioSocket TCP connection (Asterisk's
// AudioSocket() application or channel) carrying audio at rate Hz (0:
// 8000), with h's engine and configuration; it returns when the call has
// ended. AudioSocket carries no credentials: the listener's address is its
// only protection, so the Token is not asked for.
//
// AudioSocket has no ping: a peer that sends nothing at all for
// AudioSocketIdle (a live Asterisk sends audio every 20 ms) is closed,
// which ends its call and frees its leases, as a WebSocket peer that
// stops answering pings is.
func (h *GatewayHandler) ServeAudioSocket(ctx context.Context, conn net.Conn, rate int) {
	link := audiosocket.NewLink(conn)
	watch := watchIdle(h.e.Clock(), h.audioSocketIdle(), func() {
		h.e.CountProtocolError(CodeAudioSocketIdle)
		h.log.Info("audiosocket: the peer sent nothing: closing", "idle", h.audioSocketIdle())
		_ = link.Close()
	})
	defer watch.stop()
	closeWith := func(websocket.StatusCode, string) { _ = link.Close() }
	if c := tenant.CallerFrom(ctx); c.Tenant == "" && h.cfg.AudioSocketTenant != "" {
		c.Tenant = h.cfg.AudioSocketTenant
		ctx = tenant.WithCaller(ctx, c)
	}
	h.serve(ctx, watchedLink{Link: link, w: watch}, audiosocket.NewCodec(rate), true, closeWith, nil, tenant.SourceOf(conn.RemoteAddr().String()))
}

// CodeAudioSocketIdle counts (frontdoor_protocol_errors_total) AudioSocket
// connections closed because their peer sent nothing for AudioSocketIdle.
const CodeAudioSocketIdle = "audiosocket_idle"

func (h *GatewayHandler) audioSocketIdle() time.Duration {
	if h.cfg.AudioSocketIdle > 0 {
		return h.cfg.AudioSocketIdle
	}
	return heartbeat.Default.Bound()
}

// NewAudioSocketHandler returns the handler of AudioSocket connections.
func NewAudioSocketHandler(e *session.Engine, cfg GatewayConfig) *GatewayHandler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &GatewayHandler{e: e, dialect: "audiosocket", cfg: cfg, log: log.With("dialect", "audiosocket"), prompts: cfg.Prompts.cache()}
}

// upgradeToken reports whether the upgrade carries the token (or none is
// configured): as HTTP Basic authentication's password, or a Bearer token.
func (h *GatewayHandler) upgradeToken(r *http.Request) bool {
	if h.cfg.Token == "" {
		return true
	}
	if _, pass, ok := r.BasicAuth(); ok {
		return sameSecret(pass, h.cfg.Token)
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return sameSecret(tok, h.cfg.Token)
	}
	return false
}

func sameSecret(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// serve runs one stream: its start, the token, then the call. authorized
// says the upgrade carried the token; otherwise the start must. ws, when
// set, is pinged for the heartbeat. source is the peer's address as the
// per-address caps count it: the call's Caller.Source (for the booking
// caps of callbacks and handoffs) unless the layer in front set one.
func (h *GatewayHandler) serve(ctx context.Context, link gateway.Link, codec gateway.Codec, authorized bool,
	closeWith func(websocket.StatusCode, string), ws *websocket.Conn, source string) {
	conn := gateway.NewConn(link, codec, gateway.Options{Clock: h.e.Clock()})
	l := &gatewayLine{conn: conn, e: h.e, dialect: h.dialect, log: h.log, closeWith: closeWith}
	start, err := readStart(ctx, l, h.cfg.StartTimeout)
	if err != nil {
		h.log.Info(h.dialect+": no stream", "err", err)
		_ = link.Close()
		return
	}
	if !authorized && !sameSecret(start.Params["token"], h.cfg.Token) {
		h.e.CountProtocolError(h.dialect + "_token")
		h.log.Warn(h.dialect+": refused stream", "err", ErrGatewayToken)
		closeWith(websocket.StatusPolicyViolation, "bad token")
		_ = link.Close()
		return
	}
	caller := tenant.CallerFrom(ctx)
	if name := h.tenant(start); name != "" && name != caller.Tenant {
		caller = tenant.Caller{Tenant: name, Source: caller.Source} // the guard's AllowTurn was its own tenant's
	}
	if caller.Source == "" {
		caller.Source = source
	}
	ctx = tenant.WithCaller(ctx, caller)
	log := h.log.With("stream", start.StreamID, "gateway_call", start.CallID)
	st := lineStart{name: h.dialect, protocol: h.dialect, params: start.Params, format: start.Format, noKeys: !codec.Capabilities().DTMF, keyWait: h.cfg.KeyWait}
	runLine(ctx, l, st, h.prompts, log, ws)
	_ = link.Close()
}

// runLine runs the call on a started gateway line until it ends: the
// line's sender, the WebSocket's heartbeat when ws is set, and the call
// on the engine. Every phone transport on a gateway.Conn (Twilio's
// dialects and every gateway's) ends here.
func runLine(ctx context.Context, l *gatewayLine, st lineStart, prompts *promptCache, log *slog.Logger, ws *websocket.Conn) {
	t := newPhoneCall(l.e, l, st, prompts, log)
	t.log.Info(t.msg("stream started"), "params", len(st.params), "format", st.format.String(),
		"tenant", tenant.CallerFrom(ctx).Tenant)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l.conn.Run(runCtx); err != nil && runCtx.Err() == nil {
			t.log.Debug(t.msg("sender"), "err", err)
			l.closeWith(websocket.StatusInternalError, "send failed")
		}
	})
	stopPings := func() {}
	if ws != nil {
		stopPings = l.e.StartHeartbeat(ws, func() { _ = ws.CloseNow() }, t.log)
	}
	l.e.Run(ctx, t, t.capabilities())
	stopPings()
	stop()
	wg.Wait()
	t.wait()
}

// tenant is the call's tenant from its start parameter "tenant" (a custom
// parameter, header, metadata field or channel variable): trusted only on
// an endpoint that requires the gateway token, as anyone who can reach an
// open one could name any tenant. Empty: the call has none.
func (h *GatewayHandler) tenant(start *gateway.Start) string {
	if h.cfg.Token == "" {
		return ""
	}
	return start.Params["tenant"]
}

// readStart reads the stream's start within wait (0: 10 s). Bad input
// before it is answered with a close (gatewayLine.refuse), except events
// the dialect added that the codec does not know.
func readStart(ctx context.Context, l *gatewayLine, wait time.Duration) (*gateway.Start, error) {
	if wait <= 0 {
		wait = 10 * time.Second
	}
	// A timer, not a read deadline: an expired Read context would drop the
	// connection without a close status.
	timer := l.e.Clock().AfterFunc(wait, func() { l.closeWith(websocket.StatusPolicyViolation, "no start") })
	defer timer.Stop()
	for {
		ev, err := l.conn.Read(ctx)
		if err != nil {
			var de *gateway.DecodeError
			if errors.As(err, &de) {
				if errors.Is(err, gateway.ErrUnknownEvent) {
					l.e.CountProtocolError(l.dialect + "_unknown")
					continue
				}
				return nil, l.refuse(de)
			}
			return nil, err
		}
		switch ev.Kind {
		case gateway.KindStart:
			return ev.Start, nil
		case gateway.KindStop:
			l.closeWith(websocket.StatusNormalClosure, "")
			return nil, fmt.Errorf("telephony: %s: stop before start", l.dialect)
		}
	}
}

// gatewayLine is a gateway.Conn of any dialect as a line.
type gatewayLine struct {
	conn      *gateway.Conn
	e         *session.Engine
	dialect   string
	log       *slog.Logger
	closeWith func(websocket.StatusCode, string)
}

// read returns the next event the call acts on. Bad input ends the call
// with a close that says why: 1007 for a malformed message or payload,
// 1008 for a message out of order, 1009 for one too large, 1003 for an
// audio format the dialect cannot carry. An event the codec does not know
// (a gateway adds them) and a second start (mod_audio_stream's later
// text) are counted and skipped.
func (l *gatewayLine) read(ctx context.Context) (lineEvent, error) {
	for {
		ev, err := l.conn.Read(ctx)
		if err != nil {
			var de *gateway.DecodeError
			if !errors.As(err, &de) {
				return lineEvent{}, err
			}
			if errors.Is(err, gateway.ErrUnknownEvent) || errors.Is(err, gateway.ErrOrder) {
				// After the start, the only order a Conn checks is a second start.
				l.e.CountProtocolError(l.dialect + "_" + errCode(de))
				continue
			}
			return lineEvent{}, l.refuse(de)
		}
		switch ev.Kind {
		case gateway.KindMedia:
			return lineEvent{kind: lineMedia, audio: bytes.Clone(ev.Audio)}, nil
		case gateway.KindDTMF:
			return lineEvent{kind: lineDTMF, digit: ev.Digit}, nil
		case gateway.KindStop:
			return lineEvent{kind: lineStop}, nil
		case gateway.KindMark:
			return lineEvent{kind: lineMark, progress: ev.Progress}, nil
		case gateway.KindError:
			var code, msg string
			if ev.Err != nil {
				code, msg = ev.Err.Code, ev.Err.Message
			}
			return lineEvent{kind: lineError, code: code, message: msg}, nil
		}
	}
}

// badInput is the error of a stream closed for bad input.
type badInput struct {
	status websocket.StatusCode
	err    *gateway.DecodeError
}

func (b *badInput) Error() string {
	return fmt.Sprintf("telephony: closed %d: %v", int(b.status), b.err)
}

func (b *badInput) Unwrap() error { return b.err }

// refuse counts bad input and closes the stream with the status for it.
func (l *gatewayLine) refuse(de *gateway.DecodeError) error {
	status := websocket.StatusInvalidFramePayloadData
	switch {
	case errors.Is(de, gateway.ErrOrder):
		status = websocket.StatusPolicyViolation
	case errors.Is(de, gateway.ErrTooLarge):
		status = websocket.StatusMessageTooBig
	case errors.Is(de, gateway.ErrUnsupported):
		status = websocket.StatusUnsupportedData
	}
	l.e.CountProtocolError(l.dialect + "_" + errCode(de))
	l.closeWith(status, truncate(de.Error(), 120))
	return &badInput{status: status, err: de}
}

// errCode names a decode error for the protocol error counter.
func errCode(de *gateway.DecodeError) string {
	for _, c := range []struct {
		err  error
		code string
	}{{gateway.ErrTooLarge, "too_large"}, {gateway.ErrUnknownEvent, "unknown"}, {gateway.ErrPayload, "payload"},
		{gateway.ErrOrder, "order"}, {gateway.ErrUnsupported, "unsupported"}} {
		if errors.Is(de, c.err) {
			return c.code
		}
	}
	return "malformed"
}

// truncate bounds a close reason (a WebSocket close frame holds 123 bytes).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func (l *gatewayLine) sendAudio(utt string, b []byte) error { return l.conn.SendAudio(utt, b) }
func (l *gatewayLine) endUtterance(utt string)              { l.conn.EndUtterance(utt) }
func (l *gatewayLine) tracker() *gateway.Tracker            { return l.conn.Tracker() }
func (l *gatewayLine) buffered() time.Duration              { return l.conn.Buffered() }

func (l *gatewayLine) lead() time.Duration {
	return pcmu.Lead + max(0, l.conn.FrameDuration()-media.FrameDuration)
}

func (l *gatewayLine) clear(ctx context.Context) ([]gateway.Progress, error) {
	return l.conn.Clear(ctx)
}

func (l *gatewayLine) played(utt string) bool {
	p := l.conn.Tracker().Progress(utt)
	if l.conn.Capabilities().Marks {
		return p.Done
	}
	return p.Done || p.Sent > 0 && l.conn.Buffered() == 0
}

// hangup sends the dialect's hang-up where it has one (Asterisk HANGUP,
// jambonz disconnect, AudioSocket's hang-up message), then closes. A call
// a person took is not hung up: closing the socket lets the gateway's
// next step (the dialplan after Dial or AudioSocket, the next verb)
// transfer it.
func (l *gatewayLine) hangup(status wire.CloseStatus, reason string, transfer bool) {
	if !transfer && l.conn.Capabilities().Hangup && (status == wire.CloseNormal || status == wire.CloseTryLater) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := l.conn.Hangup(ctx)
		cancel()
		if err != nil && !errors.Is(err, gateway.ErrNotStarted) {
			l.log.Debug(l.dialect+": hang-up", "err", err)
		}
	}
	l.closeWith(websocket.StatusCode(status), reason)
}
