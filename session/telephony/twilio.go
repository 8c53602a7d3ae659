package telephony

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/tenant"
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

// ServeHTTP serves one stream, on the same gateway.Conn and call as every
// other gateway's (twilio.Codec is the dialect): the call asks for
// admission once `start` has arrived, and ServeHTTP returns when it has
// ended (session.Engine.Run).
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.Verify(r); err != nil {
		http.Error(w, "bad X-Twilio-Signature", http.StatusForbidden)
		return
	}
	dialect := twilio.Twilio
	if r.URL.Query().Get("dialect") == "telnyx" {
		dialect = twilio.Telnyx
	}
	codec := twilio.Codec{Dialect: dialect}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns})
	if err != nil {
		s.log.Debug("twilio: accept", "err", err)
		return
	}
	link := gateway.NewWebSocketLink(ws, codec.Capabilities().MaxMessage)
	defer link.Close()
	conn := gateway.NewConn(link, codec, gateway.Options{Clock: s.e.Clock()})
	l := &gatewayLine{conn: conn, e: s.e, dialect: dialect.String(), log: s.log,
		closeWith: func(code websocket.StatusCode, reason string) { _ = ws.Close(code, reason) }}
	ctx := r.Context()
	start, err := readStart(ctx, l, s.cfg.StartTimeout)
	if err != nil {
		s.log.Info("twilio: no stream", "err", err)
		return
	}
	if caller := tenant.CallerFrom(ctx); caller.Source == "" {
		// The upgrade's peer counts for the booking caps, as a gateway's does.
		caller.Source = tenant.SourceOf(r.RemoteAddr)
		ctx = tenant.WithCaller(ctx, caller)
	}
	log := s.log.With("stream", start.StreamID, "twilio_call", start.CallID)
	st := lineStart{name: dialect.String(), protocol: "twilio", params: start.Params, format: media.Telephony, keyWait: s.cfg.KeyWait}
	runLine(ctx, l, st, s.prompts, log, ws)
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
	// KeyWait is how long a keypad menu waits for a key once it has
	// played (0: DefaultKeyWait).
	KeyWait time.Duration
	// Prompts holds the prompt audio the endpoint renders itself, shared
	// with the other telephony endpoints given the same cache (nil: one of
	// its own).
	Prompts *PromptCache
}
