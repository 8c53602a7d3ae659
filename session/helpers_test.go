package session

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// rig is a server on an httptest listener with stub backends.
type rig struct {
	t     testing.TB
	srv   *Engine
	http  *httptest.Server
	model *stub.Model
	synth *stub.Synthesizer
	after []rigAfter
}

// rigListener wraps the test server's listener.
type rigListener func(net.Listener) net.Listener

// rigAfter runs after the server closed.
type rigAfter func()

// rigRoutes returns extra routes for the rig's mux, once its options ran.
type rigRoutes func() map[string]http.Handler

func newRig(t testing.TB, opts ...any) *rig {
	t.Helper()
	cfg := Config{
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
	for _, o := range opts {
		switch o := o.(type) {
		case func(*Config, *stub.Settings):
			o(&cfg, &st)
		case rigListener:
			wrap = o
		case rigAfter:
			after = append(after, o)
		case rigRoutes:
			routes = o
		default:
			t.Fatalf("rig option %T", o)
		}
	}
	r := &rig{t: t, model: stub.NewModel(st), synth: stub.NewSynthesizer(st)}
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.after = after
	var extra map[string]http.Handler
	if routes != nil {
		extra = routes()
	}
	r.http = httptest.NewUnstartedServer(testHandler(srv, extra))
	if wrap != nil {
		r.http.Listener = wrap(r.http.Listener)
	}
	r.http.Start()
	t.Cleanup(r.close)
	return r
}

// testHandler serves e's call routes and the operations endpoints the
// tests read, as package session/server mounts them (which these tests
// cannot import), with extra beside them.
func testHandler(e *Engine, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/session", testNative(e))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := e.Readiness(r.Context())
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{}))
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
	return r.dialPath("/v1/session")
}

// dialPath dials path on the rig, a route of the native protocol.
func (r *rig) dialPath(path string) *client {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	r.t.Cleanup(cancel)
	url := "ws" + strings.TrimPrefix(r.http.URL, "http") + path
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
	Type        string   `json:"type"`
	Disposition string   `json:"disposition"`
	Session     string   `json:"session"`
	Position    int      `json:"position"`
	Stage       string   `json:"stage"`
	Turn        string   `json:"turn"`
	Generation  uint64   `json:"generation"`
	Delta       string   `json:"delta"`
	Encoding    string   `json:"encoding"`
	Rate        int      `json:"rate"`
	Cancelled   []string `json:"cancelled"`
	Heard       *Heard   `json:"heard"`
	Reason      string   `json:"reason"`
	Text        string   `json:"text"`
	Code        string   `json:"code"`
	Error       string   `json:"error"`
	Message     string   `json:"message"`
	Ticket      string   `json:"ticket"`
	Kinds       []string `json:"kinds"`
	AudioMS     int64    `json:"audio_ms"`
	Cut         bool     `json:"cut"`
	Bytes       int      `json:"-"`
	At          time.Time
}

func (c *client) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.conn.Write(c.ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	if err := c.conn.Write(c.ctx, websocket.MessageText, []byte(s)); err != nil {
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

func (r *rig) stage(name string) StageView {
	v, ok := r.srv.Stages().Stage(name)
	if !ok {
		r.t.Fatalf("no stage %s", name)
	}
	return v
}

var _ sync.Mutex

// counter sums every series of the named metric family.
func counter(t testing.TB, r *rig, name string) float64 {
	t.Helper()
	mfs, err := r.srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

var _ = testutil.ToFloat64
