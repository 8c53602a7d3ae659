package load_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
)

// testServer is an in-process frontdoor session server on loopback with
// stub backends running on a shared capacity of each stage's slots.
type testServer struct {
	URL    string
	Srv    *server.Server
	Model  *stub.CappedModel
	Synth  *stub.CappedSynthesizer
	policy stages.Policy
}

// roomy is n slots and n places in the queue, each kept up to a second.
func roomy(n int) stages.Limits { return stages.Limits{Slots: n, Waiting: n, MaxAge: time.Second} }

type serverOpts struct {
	policy               stages.Policy
	session, model, synt stages.Limits
	stub                 stub.Settings
	capacity             int // 0: the model's slots
	cleanupTimeout       time.Duration
}

func startServer(tb testing.TB, o serverOpts) *testServer {
	tb.Helper()
	if o.capacity == 0 {
		o.capacity = o.model.Slots
	}
	ts := &testServer{policy: o.policy,
		Model: stub.NewCappedModel(o.stub, stub.NewCapacity(o.capacity, nil)),
		Synth: stub.NewCappedSynthesizer(o.stub, stub.NewCapacity(o.capacity, nil))}
	srv, err := server.New(server.Config{Config: session.Config{
		Session: o.session, Model: o.model, Synthesis: o.synt,
		CleanupTimeout: o.cleanupTimeout,
		ModelBackend:   ts.Model, Synthesizer: ts.Synth,
		NewGate: func(_ string, l stages.Limits, clock clock.Clock) (stages.Gate, error) {
			return session.LocalGate(l, clock, slog.New(slog.DiscardHandler), stages.WithPolicy(o.policy))
		},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	ts.URL, ts.Srv = hs.URL, srv
	tb.Cleanup(func() {
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
		_ = ts.Model.Close()
		_ = ts.Synth.Close()
	})
	return ts
}
