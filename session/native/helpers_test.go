package native

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// rig is an engine with stub backends behind the native handler (and
// /healthz) on an httptest listener.
type rig struct {
	t     testing.TB
	srv   *session.Engine
	http  *httptest.Server
	model *stub.Model
	synth *stub.Synthesizer
}

func newRig(t testing.TB, opts ...func(*session.Config, *stub.Settings)) *rig {
	t.Helper()
	cfg := session.Config{
		Session:        stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second},
		Model:          stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		Synthesis:      stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second},
		CleanupTimeout: time.Second,
		QueueUpdate:    20 * time.Millisecond,
	}
	st := stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000}
	for _, o := range opts {
		o(&cfg, &st)
	}
	r := &rig{t: t, model: stub.NewModel(st), synth: stub.NewSynthesizer(st)}
	cfg.ModelBackend, cfg.Synthesizer = r.model, r.synth
	e, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = e
	r.http = httptest.NewServer(r.handler())
	t.Cleanup(func() {
		r.model.Close()
		r.synth.Close()
		r.srv.Close()
		r.http.CloseClientConnections()
		r.http.Close()
	})
	return r
}

// handler serves GET /v1/session with Handler, and /healthz.
func (r *rig) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/session", Handler(r.srv, Options{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return mux
}

// client is a test caller.
type client struct {
	t    testing.TB
	conn *websocket.Conn
	ctx  context.Context
}

// msg is a decoded server message; binary frames have Type "binary".
type msg struct {
	Type        string `json:"type"`
	Disposition string `json:"disposition"`
	Turn        string `json:"turn"`
	Text        string `json:"text"`
	Encoding    string `json:"encoding"`
	Rate        int    `json:"rate"`
}

func (c *client) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.conn.Write(c.ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// until reads messages until one satisfies ok, returning all read.
func (c *client) until(ok func(msg) bool) []msg {
	c.t.Helper()
	var all []msg
	for {
		typ, b, err := c.conn.Read(c.ctx)
		if err != nil {
			c.t.Fatalf("read: %v (after %d messages)", err, len(all))
		}
		m := msg{Type: "binary"}
		if typ == websocket.MessageText {
			if err := json.Unmarshal(b, &m); err != nil {
				c.t.Fatalf("bad server JSON %s: %v", b, err)
			}
		}
		all = append(all, m)
		if ok(m) {
			return all
		}
	}
}

func (c *client) expect(typ string) msg {
	c.t.Helper()
	all := c.until(isType(typ))
	return all[len(all)-1]
}

func isType(typ string) func(msg) bool { return func(m msg) bool { return m.Type == typ } }
