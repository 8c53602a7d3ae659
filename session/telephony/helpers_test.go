package telephony

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/wav"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/native"
	"github.com/frontdoorhq/frontdoor/stages"
)

// rig is a server on an httptest listener with stub backends.
type rig struct {
	t     testing.TB
	srv   *session.Engine
	http  *httptest.Server
	model *stub.Model
	synth *stub.Synthesizer
	// backend is the engine's model: r.model until a test wraps it
	// (modelBackend, setModelBackend).
	backend *swapModel
	after   []rigAfter
	audio   *GatewayHandler // AudioSocket connections
}

// rigListener wraps the test server's listener.
type rigListener func(net.Listener) net.Listener

// rigAfter runs after the server closed.
type rigAfter func()

// rigTwilio configures the rig's /v1/twilio.
type rigTwilio func(*Config)

// rigGateway configures the rig's gateway endpoints (/v1/plivo, ...).
type rigGateway func(*GatewayConfig)

// rigRoutes returns extra routes for the rig's mux, once its options ran.
type rigRoutes func() map[string]http.Handler

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	cfg := session.Config{
		Session:        stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second},
		Model:          stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		Synthesis:      stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		CleanupTimeout: time.Second,
		QueueUpdate:    20 * time.Millisecond,
	}
	st := stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000}
	var wrap rigListener
	var after []rigAfter
	var routes rigRoutes
	var tc Config
	var gc GatewayConfig
	for _, o := range opts {
		switch o := o.(type) {
		case func(*session.Config, *stub.Settings):
			o(&cfg, &st)
		case rigListener:
			wrap = o
		case rigAfter:
			after = append(after, o)
		case rigRoutes:
			routes = o
		case rigTwilio:
			o(&tc)
		case rigGateway:
			o(&gc)
		default:
			t.Fatalf("rig option %T", o)
		}
	}
	r := &rig{t: t, model: stub.NewModel(st), synth: stub.NewSynthesizer(st)}
	r.backend = &swapModel{}
	r.backend.m.Store(&modelRef{r.model})
	cfg.ModelBackend, cfg.Synthesizer = r.backend, r.synth
	if tc.Logger == nil {
		tc.Logger = cfg.Logger // the transport logs where the engine does
	}
	if gc.Logger == nil {
		gc.Logger = cfg.Logger
	}
	srv, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.after = after
	var extra map[string]http.Handler
	if routes != nil {
		extra = routes()
	}
	r.audio = NewAudioSocketHandler(srv, gc)
	r.http = httptest.NewUnstartedServer(testHandler(t, srv, tc, gc, extra))
	if wrap != nil {
		r.http.Listener = wrap(r.http.Listener)
	}
	r.http.Start()
	t.Cleanup(r.close)
	return r
}

// testHandler serves e's calls on /v1/twilio (and /v1/twilio/{token})
// with tc, on the gateway dialects' routes with gc, and on /v1/session (package native, for the native side of a
// comparison), with extra beside them, as package session/server mounts
// them (which imports this package).
func testHandler(t testing.TB, e *session.Engine, tc Config, gc GatewayConfig, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, d := range GatewayDialects {
		h, err := NewGatewayHandler(e, d, gc)
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("GET /v1/"+d, h)
	}
	mux.Handle("GET /v1/session", native.Handler(e, native.Options{}))
	h := NewHandler(e, tc)
	mux.Handle("GET /v1/twilio", h)
	mux.Handle("GET /v1/twilio/{token}", h)
	for p, h := range extra {
		mux.Handle(p, h)
	}
	return mux
}

func (r *rig) close() {
	r.model.Close()
	r.synth.Close()
	r.srv.Close()
	for _, f := range r.after {
		f()
	}
	r.http.CloseClientConnections()
	r.http.Close()
}

// client is a test caller.
type client struct {
	t    testing.TB
	conn *websocket.Conn
	ctx  context.Context
}

func (r *rig) dial() *client {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	r.t.Cleanup(cancel)
	url := "ws" + strings.TrimPrefix(r.http.URL, "http") + "/v1/session"
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	r.t.Cleanup(func() { c.CloseNow() })
	return &client{t: r.t, conn: c, ctx: ctx}
}

// msg is a decoded server message; binary frames have Type "binary".
type msg struct {
	Type        string         `json:"type"`
	Disposition string         `json:"disposition"`
	Session     string         `json:"session"`
	Position    int            `json:"position"`
	Stage       string         `json:"stage"`
	Turn        string         `json:"turn"`
	Generation  uint64         `json:"generation"`
	Delta       string         `json:"delta"`
	Encoding    string         `json:"encoding"`
	Rate        int            `json:"rate"`
	Cancelled   []string       `json:"cancelled"`
	Heard       *session.Heard `json:"heard"`
	Reason      string         `json:"reason"`
	Text        string         `json:"text"`
	Code        string         `json:"code"`
	Error       string         `json:"error"`
	Message     string         `json:"message"`
	Ticket      string         `json:"ticket"`
	Kinds       []string       `json:"kinds"`
	AudioMS     int64          `json:"audio_ms"`
	Cut         bool           `json:"cut"`
	Bytes       int            `json:"-"`
	At          time.Time
}

func (c *client) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.conn.Write(c.ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (msg, error) {
	typ, b, err := c.conn.Read(c.ctx)
	if err != nil {
		return msg{}, err
	}
	if typ == websocket.MessageBinary {
		return msg{Type: "binary", Bytes: len(b), At: time.Now()}, nil
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("bad server JSON %s: %v", b, err)
	}
	m.At = time.Now()
	return m, nil
}

// until reads messages until one satisfies ok, returning all read.
func (c *client) until(ok func(msg) bool) []msg {
	c.t.Helper()
	var all []msg
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("read: %v (after %v)", err, types(all))
		}
		all = append(all, m)
		if ok(m) {
			return all
		}
	}
}

func (c *client) expect(typ string) msg {
	c.t.Helper()
	all := c.until(func(m msg) bool { return m.Type == typ })
	return all[len(all)-1]
}

func isType(typ string) func(msg) bool { return func(m msg) bool { return m.Type == typ } }

// admitted dials and waits for `session` admitted.
func (r *rig) admitted() *client {
	c := r.dial()
	m := c.expect("session")
	if m.Disposition != "admitted" {
		r.t.Fatalf("session %+v", m)
	}
	return c
}

func types(ms []msg) []string {
	var out []string
	for _, m := range ms {
		s := m.Type
		if m.Stage != "" && m.Type == "disposition" {
			s += ":" + m.Stage
		}
		if m.Disposition != "" {
			s += ":" + m.Disposition
		}
		out = append(out, s)
	}
	return out
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) stage(name string) session.StageView {
	v, ok := r.srv.Stages().Stage(name)
	if !ok {
		r.t.Fatalf("no stage %s", name)
	}
	return v
}

func lastOf(ms []msg, typ string) msg {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == typ {
			return ms[i]
		}
	}
	return msg{}
}

// speech reads an espeak-ng fixture from media/testdata at rate.
func speech(t testing.TB, name string, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../../media/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate == rate {
		return a.Samples
	}
	s, err := pcm.Resample(a.Samples, a.SampleRate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// historyModel wraps a model and keeps the history each turn was given.
type historyModel struct {
	backend.Model
	mu    sync.Mutex
	turns []backend.Turn
}

func (h *historyModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	h.mu.Lock()
	h.turns = append(h.turns, t)
	h.mu.Unlock()
	return h.Model.Reply(ctx, t, emit)
}

func (h *historyModel) seen() []backend.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]backend.Turn(nil), h.turns...)
}

// logRecords captures log records whose message starts with a prefix.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

func (l *logRecords) find(prefix string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if strings.HasPrefix(r["msg"].(string), prefix) {
			out = append(out, r)
		}
	}
	return out
}

// swapModel is a backend.Model whose model a test may replace once the
// engine runs (with a wrapper of the one before).
type swapModel struct{ m atomic.Pointer[modelRef] }

type modelRef struct{ backend.Model }

func (s *swapModel) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	return s.m.Load().Reply(ctx, t, emit)
}

// modelBackend is the model the engine's turns go to.
func (r *rig) modelBackend() backend.Model { return r.backend.m.Load().Model }

// setModelBackend makes m the model the engine's turns go to.
func (r *rig) setModelBackend(m backend.Model) { r.backend.m.Store(&modelRef{m}) }

// callsEnded is frontdoor_calls_total{end} of the rig's engine.
func callsEnded(t testing.TB, r *rig, end string) float64 {
	t.Helper()
	mfs, err := r.srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "end" && l.GetValue() == end {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// dumpOnFailure logs every record captured when t has failed.
func (l *logRecords) dumpOnFailure(t testing.TB) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range l.recs {
			t.Log(r)
		}
	})
}
