package load_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// testServer is an in-process frontdoor session server on loopback with
// stub backends running on a shared capacity of each stage's slots.
type testServer struct {
	URL    string
	Srv    *session.Server
	Model  *stub.CappedModel
	Synth  *stub.CappedSynthesizer
	policy stages.Policy
}

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
		Model: stub.NewCappedModel(o.stub, stub.NewCapacity(o.capacity)),
		Synth: stub.NewCappedSynthesizer(o.stub, stub.NewCapacity(o.capacity))}
	srv, err := session.New(session.Config{
		Session: o.session, Model: o.model, Synthesis: o.synt,
		CleanupTimeout: o.cleanupTimeout,
		ModelBackend:   ts.Model, Synthesizer: ts.Synth,
		NewAdmitter: func(_ string, l stages.Limits, clock stages.Clock) (session.Admitter, error) {
			return newPolicyAdmitter(l, clock, o.policy)
		},
	})
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

// policyAdmitter is session's frontdoor admitter with a selectable policy
// (the baselines of stages.WithPolicy).
type policyAdmitter struct{ *stages.Dispatcher }

func newPolicyAdmitter(l stages.Limits, clock stages.Clock, p stages.Policy) (session.Admitter, error) {
	if clock == nil {
		clock = stages.SystemClock
	}
	c, err := stages.New(l, stages.WithClock(clock.Now), stages.WithPolicy(p))
	if err != nil {
		return nil, err
	}
	return &policyAdmitter{stages.NewDispatcher(c, clock)}, nil
}

func (a *policyAdmitter) Submit(job stages.Job) (session.Ticket, stages.Disposition, error) {
	t, d, err := a.Dispatcher.Submit(job)
	if t == nil {
		return nil, d, err
	}
	return t, d, err
}

func (a *policyAdmitter) Snapshot() stages.Snapshot {
	return a.Controller().SnapshotAt(a.Clock().Now())
}

func (a *policyAdmitter) Waiting() []stages.Waiter { return a.Controller().Waiting(a.Clock().Now()) }
