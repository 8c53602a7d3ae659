package sessiontest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The limits and timings every rig's engine starts from, for a package's
// Build.Config; a test changes its own copy with a config option. Small
// on purpose: four calls at a time and two turns of each backend, so that
// a test fills a stage with a few callers.
var (
	// Calls are the session stage's limits.
	Calls = stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second}
	// Turns are the model and synthesis stages' limits.
	Turns = stages.Limits{Slots: 2, Waiting: 4, MaxAge: 2 * time.Second}
)

const (
	// CleanupTimeout is the engine's, short so that a test of an overdue
	// cleanup does not wait long.
	CleanupTimeout = time.Second
	// QueueUpdate is how often a waiting caller is told its position.
	QueueUpdate = 20 * time.Millisecond
)

// Settings are the stub backends' settings a rig starts from: four tokens
// a reply, five audio frames an utterance, at 16 kHz.
func Settings() stub.Settings { return stub.Settings{Tokens: 4, FrameCount: 5, Rate: 16000} }

// Engine is what a rig needs of the engine it serves (*session.Engine):
// closing it, and its metrics.
type Engine interface {
	Close()
	Registry() *prometheus.Registry
}

// Rig is an engine on stub backends behind a handler on an httptest
// server (loopback), closed when the test ends.
type Rig[E Engine] struct {
	T      testing.TB
	Engine E
	HTTP   *httptest.Server
	Model  *stub.Model
	Synth  *stub.Synthesizer
	after  []After
}

// Options of NewRig, besides a package's config option (func(*C,
// *stub.Settings)) and those its Build.Option takes.
type (
	// Listener wraps the test server's listener.
	Listener func(net.Listener) net.Listener
	// After runs once the engine closed, before the server does.
	After func()
	// Routes returns extra routes for the rig's mux, once the engine runs.
	Routes func() map[string]http.Handler
)

// Build says how a package's tests make the engine of a rig and what
// serves it.
type Build[C any, E Engine] struct {
	// Config is the engine's config before the options change it.
	Config C
	// Option takes an option of the package's own, reporting whether it
	// is one; nil: the package has none.
	Option func(any) bool
	// New makes the engine from the config on the rig's stub backends.
	New func(C, *stub.Model, *stub.Synthesizer) (E, error)
	// Mount adds the engine's routes to the rig's mux.
	Mount func(*http.ServeMux, E)
}

// NewRig makes the engine b builds, after opts: a func(*C, *stub.Settings)
// changes the config and the stub backends' settings, a Listener, After
// or Routes is the rig's, anything else is b.Option's.
func NewRig[C any, E Engine](t testing.TB, b Build[C, E], opts ...any) *Rig[E] {
	t.Helper()
	cfg, st := b.Config, Settings()
	var wrap Listener
	var after []After
	var routes Routes
	for _, o := range opts {
		switch o := o.(type) {
		case func(*C, *stub.Settings):
			o(&cfg, &st)
		case Listener:
			wrap = o
		case After:
			after = append(after, o)
		case Routes:
			routes = o
		default:
			if b.Option == nil || !b.Option(o) {
				t.Fatalf("rig option %T", o)
			}
		}
	}
	r := &Rig[E]{T: t, Model: stub.NewModel(st), Synth: stub.NewSynthesizer(st), after: after}
	e, err := b.New(cfg, r.Model, r.Synth)
	if err != nil {
		r.Model.Close()
		r.Synth.Close()
		t.Fatal(err)
	}
	r.Engine = e
	mux := http.NewServeMux()
	b.Mount(mux, e)
	if routes != nil {
		for p, h := range routes() {
			mux.Handle(p, h)
		}
	}
	r.HTTP = httptest.NewUnstartedServer(mux)
	if wrap != nil {
		r.HTTP.Listener = wrap(r.HTTP.Listener)
	}
	r.HTTP.Start()
	t.Cleanup(r.close)
	return r
}

// close stops the backends, the engine, then what runs After (which may
// need the engine closed), and the server last.
func (r *Rig[E]) close() {
	r.Model.Close()
	r.Synth.Close()
	r.Engine.Close()
	for _, f := range r.after {
		f()
	}
	r.HTTP.CloseClientConnections()
	r.HTTP.Close()
}

// WSURL is the WebSocket URL of path on the rig's server.
func (r *Rig[E]) WSURL(path string) string {
	return "ws" + strings.TrimPrefix(r.HTTP.URL, "http") + path
}

// Dial opens a caller's WebSocket on /v1/session.
func (r *Rig[E]) Dial() *Client {
	r.T.Helper()
	return r.DialPath("/v1/session")
}

// DialPath opens a caller's WebSocket on path, a route of the native
// protocol. Its context ends after 10 s, so that a test whose server never
// answers fails instead of hanging.
func (r *Rig[E]) DialPath(path string) *Client {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	r.T.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, r.WSURL(path), nil)
	if err != nil {
		r.T.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	r.T.Cleanup(func() { c.CloseNow() })
	return &Client{T: r.T, Conn: c, Ctx: ctx}
}

// Admitted dials and waits for `session` admitted.
func (r *Rig[E]) Admitted() *Client {
	r.T.Helper()
	c := r.Dial()
	m := c.Expect("session")
	if m.Disposition != "admitted" {
		r.T.Fatalf("session %+v", m)
	}
	return c
}

// Counter sums every series of the engine's metric family name: counters,
// gauges, and histograms by their sample counts.
func (r *Rig[E]) Counter(name string) float64 {
	r.T.Helper()
	mfs, err := r.Engine.Registry().Gather()
	if err != nil {
		r.T.Fatal(err)
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
