package telephony

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
)

// Handler serves GET /v1/twilio (and /v1/twilio/{token}): a Twilio Media
// Streams bidirectional stream (docs/TELEPHONY.md), or Telnyx's dialect of
// it (?dialect=telnyx), carrying one call of its engine.
type Handler struct {
	e       *session.Engine
	cfg     Config
	log     *slog.Logger
	prompts *promptCache
}

// NewHandler returns the Handler that starts its calls on e.
func NewHandler(e *session.Engine, cfg Config) *Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Handler{e: e, cfg: cfg, log: log, prompts: cfg.Prompts.cache()}
}

// ServeHTTP serves one stream. The call asks for admission once `start`
// has arrived; from then on it is a call like any other, over
// a phoneCall on a twilioLine, and ServeHTTP returns when it has ended
// (session.Engine.Run).
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.Verify(r); err != nil {
		http.Error(w, "bad X-Twilio-Signature", http.StatusForbidden)
		return
	}
	dialect := twilio.Twilio
	if r.URL.Query().Get("dialect") == "telnyx" {
		dialect = twilio.Telnyx
	}
	conn, err := twilio.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns},
		twilio.ConnOptions{Dialect: dialect, Clock: s.e.Clock()})
	if err != nil {
		s.log.Debug("twilio: accept", "err", err)
		return
	}
	ctx := r.Context()
	start, err := s.twilioStart(ctx, conn)
	if err != nil {
		s.log.Info("twilio: no stream", "err", err)
		return
	}
	log := s.log.With("stream", start.StreamSID, "twilio_call", start.CallSID)
	st := lineStart{name: dialect.String(), protocol: "twilio", params: start.CustomParameters, format: media.Telephony}
	t := newPhoneCall(s.e, &twilioLine{conn: conn}, st, s.prompts, log)
	t.log.Info("twilio: stream started", "params", len(start.CustomParameters))
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := conn.Run(runCtx); err != nil && runCtx.Err() == nil {
			t.log.Debug("twilio: sender", "err", err)
			_ = conn.Close(websocket.StatusInternalError, "send failed")
		}
	})
	stopPings := s.e.StartHeartbeat(conn, func() { _ = conn.CloseNow() }, t.log)
	s.e.Run(ctx, t, t.capabilities())
	stopPings()
	stop()
	wg.Wait()
	t.wait()
}

// ErrSignature: a telephony upgrade without a valid X-Twilio-Signature
// while an auth token is configured.
var ErrSignature = errors.New("telephony: bad X-Twilio-Signature")

// Verify checks a /v1/twilio upgrade's X-Twilio-Signature (nil when no
// auth token is configured): over Config.PublicURL, plus "/" and
// the call token when the path carries one. The layer in front calls it
// before it spends the call token, so that a request the gateway did not
// sign cannot use up a token; the handler checks again.
func (s *Handler) Verify(r *http.Request) error {
	tc := s.cfg
	if tc.AuthToken == "" {
		return nil
	}
	signed := tc.PublicURL
	if tok, ok := strings.CutPrefix(r.URL.Path, "/v1/twilio/"); ok && tok != "" {
		signed = strings.TrimSuffix(signed, "/") + "/" + tok
	}
	if err := twilio.ValidateRequest(r, tc.AuthToken, signed); err != nil {
		s.e.CountProtocolError("twilio_signature")
		s.log.Warn("twilio: refused upgrade", "err", err, "remote", r.RemoteAddr)
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return nil
}

// twilioStart reads connected and start, within the start timeout.
func (s *Handler) twilioStart(ctx context.Context, conn *twilio.Conn) (*twilio.Start, error) {
	wait := s.cfg.StartTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	// A timer, not a read deadline: an expired Read context would drop the
	// connection without a close status.
	timer := s.e.Clock().AfterFunc(wait, func() { _ = conn.Close(websocket.StatusPolicyViolation, "no start") })
	defer timer.Stop()
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			var de *twilio.DecodeError
			if errors.As(err, &de) {
				s.e.CountProtocolError("twilio_" + de.Event)
				continue
			}
			return nil, err
		}
		switch m.Event {
		case twilio.EventStart:
			if !m.Start.MediaFormat.IsMulaw8k() {
				_ = conn.Close(websocket.StatusUnsupportedData, "only audio/x-mulaw 8000 Hz mono")
				return nil, fmt.Errorf("session: twilio media format %+v", m.Start.MediaFormat)
			}
			return m.Start, nil
		case twilio.EventStop:
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return nil, errors.New("session: twilio stop before start")
		}
	}
}

// twilioLine is a Media Streams connection as a line.
type twilioLine struct{ conn *twilio.Conn }

func (l *twilioLine) read(ctx context.Context) (lineEvent, error) {
	for {
		m, err := l.conn.Read(ctx)
		if err != nil {
			var de *twilio.DecodeError
			if errors.As(err, &de) {
				return lineEvent{}, &session.ProtocolError{Code: session.CodeBadField, Message: fmt.Sprintf("%v", de)}
			}
			return lineEvent{}, err
		}
		switch m.Event {
		case twilio.EventMedia:
			if m.Media.Track != "" && m.Media.Track != "inbound" && m.Media.Track != "inbound_track" {
				continue
			}
			return lineEvent{kind: lineMedia, audio: m.Media.Payload}, nil
		case twilio.EventStop:
			return lineEvent{kind: lineStop}, nil
		case twilio.EventDTMF:
			return lineEvent{kind: lineDTMF, digit: m.DTMF.Digit}, nil
		case twilio.EventMark:
			return lineEvent{kind: lineMark, progress: m.Progress}, nil
		case twilio.EventError:
			return lineEvent{kind: lineError, code: strconv.Itoa(m.Error.Code), message: m.Error.Title}, nil
		}
	}
}

func (l *twilioLine) sendAudio(utt string, b []byte) error { return l.conn.SendAudio(utt, b) }
func (l *twilioLine) endUtterance(utt string)              { l.conn.EndUtterance(utt) }
func (l *twilioLine) tracker() *gateway.Tracker            { return l.conn.Tracker() }
func (l *twilioLine) buffered() time.Duration              { return l.conn.Buffered() }
func (l *twilioLine) lead() time.Duration                  { return pcmu.Lead }
func (l *twilioLine) played(utt string) bool               { return l.conn.Tracker().Progress(utt).Done }

func (l *twilioLine) clear(ctx context.Context) ([]gateway.Progress, error) {
	return l.conn.Clear(ctx)
}

// hangup closes the WebSocket with status: Media Streams has no hang-up
// message, and the call moves on to the TwiML after <Connect>.
func (l *twilioLine) hangup(status session.CloseStatus, reason string, _ bool) {
	_ = l.conn.Close(websocket.StatusCode(status), reason)
}

// Config configures GET /v1/twilio, the Twilio Media Streams endpoint.
type Config struct {
	// AuthToken, when set, makes the endpoint require a valid
	// X-Twilio-Signature on the upgrade, computed over PublicURL.
	AuthToken string
	// PublicURL is the stream URL exactly as written in the TwiML
	// (wss://host/v1/twilio): behind a proxy the server cannot rebuild it.
	// A stream URL carrying a call token (/v1/twilio/<token>, see
	// session/guard) is signed with the token: PublicURL + "/" + token.
	PublicURL string
	// StartTimeout bounds the wait for `start` after the upgrade (0: 10s).
	StartTimeout time.Duration
	// OriginPatterns are the cross-origin hosts allowed to open the
	// WebSocket (coder/websocket AcceptOptions); same-origin always is.
	OriginPatterns []string
	// Logger (nil: discard).
	Logger *slog.Logger
	// Prompts holds the prompt audio the endpoint renders itself, shared
	// with the other telephony endpoints given the same cache (nil: one of
	// its own).
	Prompts *PromptCache
}
