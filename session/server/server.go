package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/native"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/session/webrtc"
)

// Config configures a Server: the engine's configuration and what the HTTP
// server mounts beside the engine's routes.
type Config struct {
	session.Config

	// Root serves GET / (nil: a placeholder page). Handlers are mounted on
	// the server's mux by pattern (e.g. "GET /v1/agents"); a handler for
	// a media route ("GET /v1/twilio", "GET /v1/twilio/{token}", "GET
	// /v1/webrtc", "GET /v1/plivo", ...) takes its place (a test double, a proxy).
	Root     http.Handler
	Handlers map[string]http.Handler
	// OriginPatterns are the cross-origin hosts allowed to open a
	// WebSocket (coder/websocket AcceptOptions) on the call routes;
	// same-origin always is.
	OriginPatterns []string

	// Twilio configures GET /v1/twilio, the Twilio Media Streams
	// endpoint (its OriginPatterns and Logger, when unset, are the
	// server's and the engine's).
	Twilio telephony.Config
	// Gateway configures the gateway dialects' endpoints, GET /v1/plivo,
	// /v1/exotel, /v1/vonage, /v1/asterisk, /v1/freeswitch and
	// /v1/jambonz (telephony.GatewayDialects), and AudioSocket
	// connections (Server.AudioSocket); its OriginPatterns, Logger and
	// Prompts, when unset, are the server's, the engine's and the Twilio
	// endpoint's.
	Gateway telephony.GatewayConfig
	// WebRTC configures GET /v1/webrtc, the browser endpoint (its
	// OriginPatterns and Logger, when unset, are the server's and the
	// engine's).
	WebRTC webrtc.Config
}

// Server is a session.Engine served over HTTP.
type Server struct {
	*session.Engine
	cfg    Config
	mux    *http.ServeMux
	twilio *telephony.Handler
	audio  *telephony.GatewayHandler
}

// New returns a Server with a new Engine for cfg.Config. Like the engine
// it starts no goroutine.
func New(cfg Config) (*Server, error) {
	e, err := session.New(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{Engine: e, cfg: cfg}
	if err := s.routes(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// VerifyTwilio checks a /v1/twilio upgrade's X-Twilio-Signature
// (telephony.Handler.Verify), for the layer in front (session/guard) to
// call before it spends a call token.
func (s *Server) VerifyTwilio(r *http.Request) error { return s.twilio.Verify(r) }

// AudioSocket returns the handler of Asterisk AudioSocket connections, for
// the TCP listener that accepts them.
func (s *Server) AudioSocket() *telephony.GatewayHandler { return s.audio }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() error {
	s.mux = http.NewServeMux()
	s.mux.Handle("GET /v1/session", native.Handler(s.Engine,
		native.Options{OriginPatterns: s.cfg.OriginPatterns, Logger: s.cfg.Logger}))
	tc := s.cfg.Twilio
	if tc.OriginPatterns == nil {
		tc.OriginPatterns = s.cfg.OriginPatterns
	}
	if tc.Logger == nil {
		tc.Logger = s.cfg.Logger
	}
	if tc.Prompts == nil {
		tc.Prompts = telephony.NewPromptCache() // one rendering of each prompt for every telephony caller
	}
	s.twilio = telephony.NewHandler(s.Engine, tc)
	media := map[string]http.Handler{"GET /v1/twilio": s.twilio, "GET /v1/twilio/{token}": s.twilio}
	gc := s.cfg.Gateway
	if gc.OriginPatterns == nil {
		gc.OriginPatterns = s.cfg.OriginPatterns
	}
	if gc.Logger == nil {
		gc.Logger = s.cfg.Logger
	}
	if gc.Prompts == nil {
		gc.Prompts = tc.Prompts
	}
	if gc.AudioSocketIdle == 0 {
		// AudioSocket has no ping: its silence bound is the WebSocket
		// heartbeat's (-ws-ping-interval + -ws-ping-timeout).
		gc.AudioSocketIdle = s.cfg.Heartbeat.Bound()
	}
	for _, rt := range routeTable {
		if rt.Dialect == "" || rt.Dialect == "twilio" {
			continue
		}
		h, err := telephony.NewGatewayHandler(s.Engine, rt.Dialect, gc)
		if err != nil {
			return err
		}
		media["GET "+rt.Path] = h
	}
	s.audio = telephony.NewAudioSocketHandler(s.Engine, gc)
	rc := s.cfg.WebRTC
	if rc.OriginPatterns == nil {
		rc.OriginPatterns = s.cfg.OriginPatterns
	}
	if rc.Logger == nil {
		rc.Logger = s.cfg.Logger
	}
	media["GET /v1/webrtc"] = webrtc.Handler(s.Engine, rc)
	for p, h := range media {
		if _, own := s.cfg.Handlers[p]; !own {
			s.mux.Handle(p, h)
		}
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	s.mux.HandleFunc("GET /readyz", s.serveReady)
	reg := s.Registry()
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.mux.HandleFunc("GET /v1/stages", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Stages())
	})
	root := s.cfg.Root
	if root == nil {
		root = http.HandlerFunc(placeholder)
	}
	s.mux.Handle("GET /{$}", root)
	for p, h := range s.cfg.Handlers {
		s.mux.Handle(p, h)
	}
	return nil
}

// serveReady is GET /readyz: 200 when the engine should be sent new calls,
// 503 with its reasons when not (session.Readiness).
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	rd := s.Readiness(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rd)
}

func placeholder(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, `<!doctype html><title>frontdoor</title><h1>frontdoor</h1>
<p>The voice session server is running. Calls connect on <code>/v1/session</code> (WebSocket).
See <a href="/v1/stages">/v1/stages</a>, <a href="/metrics">/metrics</a>, <a href="/readyz">/readyz</a>.</p>`)
}
