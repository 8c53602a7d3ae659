package telephony

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/twilio"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/pcmu"
)

// Handler serves GET /v1/twilio (and /v1/twilio/{token}): a Twilio Media
// Streams bidirectional stream (docs/TELEPHONY.md), or Telnyx's dialect of
// it (?dialect=telnyx), carrying one call of its engine.
type Handler struct {
	e   *session.Engine
	cfg Config
	log *slog.Logger
}

// NewHandler returns the Handler that starts its calls on e.
func NewHandler(e *session.Engine, cfg Config) *Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Handler{e: e, cfg: cfg, log: log}
}

// ServeHTTP serves one stream. The call asks for admission once `start`
// has arrived; from then on it is a call like any other, over
// twilioTransport, and ServeHTTP returns when it has ended
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
		twilio.ConnOptions{Dialect: dialect})
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
	t := &twilioTransport{s: s, conn: conn, start: start, speaks: s.e.Fallback().SpeaksPrompts(),
		log: s.log.With("stream", start.StreamSID, "twilio_call", start.CallSID), byTurn: map[string]string{},
		menu: newTwilioMenu(s.e.Fallback(), start.CustomParameters)}
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
	s.e.Run(ctx, t, session.Capabilities{Interrupt: t.Interrupt, Keypad: t.keypad, Answer: t.spokenAnswer})
	stopPings()
	stop()
	wg.Wait()
	t.prompts.Wait()
	t.bg.Wait()
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

// twilioTransport carries a Call over a Media Streams connection. Session
// events have no place on the wire: audio_start and audio_end bracket an
// utterance (a mark follows it), `interrupted` becomes a clear, prompts are
// heard as audio, an `offer` becomes the keypad menu (menu.go), and
// everything is logged.
type twilioTransport struct {
	s      *Handler
	conn   *twilio.Conn
	start  *twilio.Start
	log    *slog.Logger
	speaks bool // the Fallback sends prompt audio itself
	menu   *twilioMenu

	hello bool // the reader's: hello was delivered
	// handedOff: a person took the call (menu.go). The
	// conversation is over on this stream while it closes for the
	// transfer: the caller's audio is not listened to, and no more audio
	// of the call's is sent after the line that says so.
	handedOff atomic.Bool

	mu      sync.Mutex
	n       int
	utt     string            // utterance being sent
	conv    *pcmu.Converter   // its conversion to µ-law
	byTurn  map[string]string // turn -> its latest utterance
	last    string            // the last utterance queued
	closing bool              // Close began: no more prompts are started
	prompts sync.WaitGroup    // prompt rendering
	bg      sync.WaitGroup    // a close the transport starts itself (a transfer)
	once    sync.Once
}

// Recv implements Transport. The first event is a hello declaring 8 kHz
// µ-law, the format of both directions.
func (t *twilioTransport) Recv(ctx context.Context) (session.ClientEvent, error) {
	if !t.hello {
		t.hello = true
		return session.ClientEvent{Kind: session.EventHello, Type: "hello", Audio: media.Telephony}, nil
	}
	for {
		m, err := t.conn.Read(ctx)
		if err != nil {
			var de *twilio.DecodeError
			if errors.As(err, &de) {
				return session.ClientEvent{}, &session.ProtocolError{Code: session.CodeBadField, Message: fmt.Sprintf("%v", de)}
			}
			if t.handedOff.Load() { // the stream ends because a person took the call
				return session.ClientEvent{}, fmt.Errorf("%w: %w", session.ErrTransferred, err)
			}
			return session.ClientEvent{}, err
		}
		switch m.Event {
		case twilio.EventMedia:
			if m.Media.Track != "" && m.Media.Track != "inbound" && m.Media.Track != "inbound_track" {
				continue
			}
			if t.handedOff.Load() {
				continue // the call is a person's now
			}
			return session.ClientEvent{Kind: session.EventAudio, Type: "media", Data: m.Media.Payload}, nil
		case twilio.EventStop:
			t.log.Info("twilio: stop")
			return session.ClientEvent{Kind: session.EventHangup, Type: "hangup"}, nil
		case twilio.EventDTMF:
			digit := m.DTMF.Digit
			if len(digit) > 4 {
				digit = digit[:4] // a log line, not a place for the gateway's bytes
			}
			t.log.Info("twilio: dtmf", "digit", digit)
			if ev, ok := t.pressed(ctx, m.DTMF.Digit); ok {
				return ev, nil
			}
		case twilio.EventMark:
			if p := m.Progress; p != nil {
				t.log.Debug("twilio: mark", "utterance", p.Utterance, "played_ms", p.Played.Milliseconds(), "done", p.Done, "cleared", p.Cleared)
			}
		case twilio.EventError:
			t.log.Warn("twilio: gateway error", "code", m.Error.Code, "title", m.Error.Title)
		}
	}
}

// Send implements Transport.
func (t *twilioTransport) Send(ctx context.Context, msg any) error {
	t.noteSent(msg)
	switch m := msg.(type) {
	case *session.AudioStartMsg:
		if t.handedOff.Load() {
			return nil // no utterance: its audio and end are dropped
		}
		conv, err := pcmu.NewConverter(m.Encoding, m.Rate)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.n++
		t.utt = fmt.Sprintf("%s~%d", m.Turn, t.n)
		t.conv = conv
		if len(t.byTurn) >= 64 {
			clear(t.byTurn)
		}
		t.byTurn[m.Turn] = t.utt
		t.mu.Unlock()
	case *session.AudioEndMsg:
		t.mu.Lock()
		utt, conv := t.utt, t.conv
		t.utt, t.conv = "", nil
		t.mu.Unlock()
		if utt == "" {
			return nil
		}
		if rest := conv.Flush(); len(rest) > 0 {
			if err := t.conn.SendAudio(utt, rest); err != nil {
				return err
			}
		}
		t.endUtterance(utt)
	case *session.PromptMsg:
		t.log.Info("twilio: prompt", "stage", m.Stage, "reason", m.Reason, "text", m.Text)
		if !t.speaks {
			t.speak(m.Text)
		}
	case *session.InterruptedMsg:
		heard := int64(-1)
		if m.Heard != nil {
			heard = m.Heard.AudioMS
		}
		t.log.Info("twilio: interrupted", "generation", m.Generation, "cancelled", m.Cancelled, "heard_ms", heard)
	case *session.SessionMsg:
		t.log.Info("twilio: session", "disposition", m.Disposition, "position", m.Position)
	case *session.OfferMsg:
		t.offered(m)
	case *session.FallbackMsg:
		t.answered(m)
	case *session.ErrorMsg:
		t.log.Debug("twilio: error", "code", m.Code, "message", m.Message)
		t.answerFailed(m)
	default:
		t.log.Debug("twilio: event", "msg", fmt.Sprintf("%T", msg))
	}
	return nil
}

func (t *twilioTransport) endUtterance(utt string) {
	t.conn.EndUtterance(utt)
	// The last utterance is the one Close waits to hear played. One that
	// is done as it ends (a key cleared it while it was queued: prompt
	// audio whose premise ended, its end written late) adds nothing to
	// wait for, and must not hide a line queued after it was cleared.
	if t.conn.Tracker().Progress(utt).Done {
		return
	}
	t.mu.Lock()
	t.last = utt
	t.mu.Unlock()
}

// speak renders a prompt for a Fallback that sends only text, and queues it
// as an utterance of its own.
func (t *twilioTransport) speak(text string) {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return
	}
	t.n++
	utt := fmt.Sprintf("prompt~%d", t.n)
	t.prompts.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.prompts.Done()
		b, err := t.s.promptAudio(context.Background(), text)
		if err != nil || len(b) == 0 {
			t.log.Warn("twilio: prompt audio", "err", err)
			return
		}
		if err := t.conn.SendAudio(utt, b); err != nil {
			return
		}
		t.endUtterance(utt)
	}()
}

// SendAudio implements Transport: the frame joins the connection's pacer,
// and the writer waits while more than pcmu.Lead is ahead of playback.
func (t *twilioTransport) SendAudio(ctx context.Context, b []byte) error {
	t.mu.Lock()
	utt, conv := t.utt, t.conv
	t.mu.Unlock()
	if conv == nil {
		return nil // audio without audio_start: nothing to say it belongs to
	}
	if t.handedOff.Load() {
		return nil // the rest of a reply begun before a person took the call
	}
	ulaw, err := conv.Convert(b)
	if err != nil {
		return err
	}
	if err := t.conn.SendAudio(utt, ulaw); err != nil {
		return err
	}
	return pcmu.WaitBuffered(ctx, t.conn.Buffered, pcmu.Lead)
}

// Interrupt is the transport's Capabilities.Interrupt: clear, and what the caller heard of
// turn's utterance by the tracker (marks and playback clock).
func (t *twilioTransport) Interrupt(ctx context.Context, turn string) (time.Duration, bool) {
	t.mu.Lock()
	utt := t.byTurn[turn]
	t.utt, t.conv = "", nil
	t.mu.Unlock()
	progress, err := t.conn.Clear(ctx)
	if err != nil {
		t.log.Debug("twilio: clear", "err", err)
	}
	if utt == "" {
		return 0, false
	}
	for _, p := range progress {
		if p.Utterance == utt {
			return p.Played, true
		}
	}
	p := t.conn.Tracker().Progress(utt)
	return p.Played, p.Sent > 0
}

// Close implements Transport. A refused or expired call first hears its
// prompt (and the keypad menu's outcome, menu.go): Close waits
// (bounded) for the prompt to be rendered, played and its mark echoed, then
// closes with 1013. The keypad menu also closes a conversation this way
// when a person took the call. Prompts asked for once Close began are not
// started: the rendering Close waits for is all there will be.
func (t *twilioTransport) Close(status session.CloseStatus, reason string) {
	t.once.Do(func() {
		t.menuClosing(status)
		t.mu.Lock()
		t.closing = true
		t.mu.Unlock()
		if status == session.CloseTryLater {
			t.waitPlayed(5 * time.Second)
		}
		_ = t.conn.Close(websocket.StatusCode(status), reason)
	})
}

// waitPlayed waits for prompt rendering and then for the last utterance's
// final mark to come back, at most its buffered audio plus grace.
func (t *twilioTransport) waitPlayed(grace time.Duration) {
	rendered := make(chan struct{})
	go func() { t.prompts.Wait(); close(rendered) }()
	select {
	case <-rendered:
	case <-time.After(grace):
	}
	deadline := time.Now().Add(t.conn.Buffered() + grace)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		last := t.last
		t.mu.Unlock()
		if last == "" || t.conn.Tracker().Progress(last).Done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
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
}

// maxPrompt bounds the prompt audio a transport renders itself.
const maxPrompt = 30 * time.Second

// promptAudio renders text with the synthesizer, outside the synthesis
// stage (prompts are short and must be heard even when it is full), as
// 8 kHz µ-law.
func (s *Handler) promptAudio(ctx context.Context, text string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out []byte
	var rs *pcm.Resampler
	rate := 0
	err := s.e.Synthesizer().Synthesize(ctx, text, func(a backend.Audio) error {
		if rate == 0 {
			rate = a.Rate
			if a.Rate != 8000 {
				var err error
				if rs, err = pcm.NewResampler(a.Rate, 8000); err != nil {
					return err
				}
			}
		}
		if a.Rate != rate {
			return fmt.Errorf("telephony: prompt audio changed rate: %w", backend.ErrMalformed)
		}
		samples := a.Samples
		if rs != nil {
			samples = rs.Resample(nil, samples)
		}
		if media.Telephony.Duration(len(out)+len(samples)) > maxPrompt {
			return nil
		}
		out = g711.EncodeMulaw(out, samples)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rs != nil {
		out = g711.EncodeMulaw(out, rs.Flush(nil))
	}
	return out, nil
}
