package offer

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
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
		default:
			t.Fatalf("rig option %T", o)
		}
	}
	r := &rig{t: t, model: stub.NewModel(st), synth: stub.NewSynthesizer(st)}
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth

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
	r.http = httptest.NewUnstartedServer(testHandler(srv, extra))
	if wrap != nil {
		r.http.Listener = wrap(r.http.Listener)
	}
	r.http.Start()
	t.Cleanup(r.close)
	return r
}

// testHandler serves e's calls on /v1/session (package native), with
// extra beside them.
func testHandler(e *session.Engine, extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/session", native.Handler(e, native.Options{}))
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

// untilAll reads until a message of each of types has come, in any
// order, and returns every message read.
func (c *client) untilAll(types ...string) []msg {
	c.t.Helper()
	left := map[string]bool{}
	for _, typ := range types {
		left[typ] = true
	}
	return c.until(func(m msg) bool {
		delete(left, m.Type)
		return len(left) == 0
	})
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

func lastOf(ms []msg, typ string) msg {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == typ {
			return ms[i]
		}
	}
	return msg{}
}
