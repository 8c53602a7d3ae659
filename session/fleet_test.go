package session

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// fleetGates builds every stage of a server on the Redis behind srv,
// as frontdoor serve -store does; ready collects the gates for Config.Ready.
func fleetGates(t testing.TB, srv *redistest.Server, ready *[]stages.Gate) func(string, stages.Limits, clock.Clock) (stages.Gate, error) {
	rdb := srv.Client(t)
	return func(name string, l stages.Limits, c clock.Clock) (stages.Gate, error) {
		st, err := redisstage.New(rdb, name, l, redisstage.Options{LeaseTTL: 2 * time.Second, Warmup: -1})
		if err != nil {
			return nil, err
		}
		d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: c, Poll: 20 * time.Millisecond, Grace: 200 * time.Millisecond})
		if ready != nil {
			*ready = append(*ready, d)
		}
		return d, nil
	}
}

func fleetRig(t *testing.T, srv *redistest.Server, model stages.Limits) (*rig, *[]stages.Gate) {
	gates := &[]stages.Gate{}
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Model = model
		c.NewGate = fleetGates(t, srv, gates)
		c.Ready = func(ctx context.Context) error {
			for _, g := range *gates {
				if err := g.Ready(ctx); err != nil {
					return err
				}
			}
			return nil
		}
		s.ModelDelay = 300 * time.Millisecond
	})
	return r, gates
}

// Two servers sharing one Redis keep one model limit: the session's own
// overload behaviour (TestModelOverload) holds across replicas.
func TestFleetModelOverloadAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	lim := stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
	ra, _ := fleetRig(t, srv, lim)
	rb, _ := fleetRig(t, srv, lim)
	a, b, c := ra.Admitted(), rb.Admitted(), ra.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	q := b.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "queued" })
	if got := sessiontest.LastOf(q, "disposition"); got.Position != 1 || got.Stage != StageModel {
		t.Fatalf("queued on the other replica %+v", got)
	}
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "x"})
	all := c.Until(sessiontest.IsType("turn_end"))
	if d, p := sessiontest.LastOf(all, "disposition"), sessiontest.LastOf(all, "prompt"); d.Disposition != "overloaded" || p.Reason != "overloaded" {
		t.Fatalf("fleet-wide overload: %v", sessiontest.Types(all))
	}
	for _, cl := range []*sessiontest.Client{a, b} {
		if end := sessiontest.LastOf(cl.Until(sessiontest.IsType("turn_end")), "turn_end"); end.Disposition != "completed" {
			t.Fatalf("turn_end %+v", end)
		}
	}
	// Both replicas show the one fleet-wide ledger.
	for _, r := range []*rig{ra, rb} {
		if s := r.stage(StageModel); s.Ledger.Refused.Overloaded != 1 || s.Ledger.Admitted != 2 {
			t.Fatalf("ledger %+v", s.Ledger)
		}
	}
}

// The WebSocket pins a call to one replica, so all of a call's turns are
// queued through it; generations live in Redis, so a Rotate from any
// replica (an operator tool, or a call moved after a reconnect) cancels
// the call's work queued through another.
func TestFleetBargeInCancelsWorkQueuedElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	mk := fleetGates(t, srv, nil)
	lim := stages.Limits{Slots: 1, Waiting: 4, MaxAge: 5 * time.Second}
	a, err := mk(StageModel, lim, clock.System)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, _ := mk(StageModel, lim, clock.System)
	defer b.Stop()
	ctx := context.Background()
	for _, o := range []string{"other", "call"} {
		if err := a.Rotate(ctx, o, 1); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if _, d, err := a.Submit(ctx, stages.Job{ID: "busy", Owner: "other", Generation: 1, Born: now}); err != nil || d != stages.Queued {
		t.Fatalf("first %v %v", d, err)
	}
	tk, d, err := a.Submit(ctx, stages.Job{ID: "call/t1", Owner: "call", Generation: 1, Born: now})
	if err != nil || d != stages.Queued {
		t.Fatalf("second %v %v", d, err)
	}
	if pos, ok, err := tk.Position(ctx); err != nil || !ok || pos != 1 {
		t.Fatalf("position %d %v", pos, ok)
	}
	if err := b.Rotate(ctx, "call", 2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("work queued through replica a not cancelled by b's rotate")
	}
	if d, _ := tk.Result(); d != stages.Cancelled {
		t.Fatalf("result %v", d)
	}
	if _, err := a.Release(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	if sn, err := b.Snapshot(ctx); err != nil || sn.Leased != 0 || sn.Queued != 0 || sn.Ledger.CancelledQueued != 1 {
		t.Fatalf("snapshot %+v", sn)
	}
}

// Redis down: a queued caller is not left waiting, new callers hear the
// truthful closed prompt, /readyz is 503; with Redis back, calls admit.
func TestFleetRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r, _ := fleetRig(t, srv, stages.Limits{Slots: 1, Waiting: 2, MaxAge: 500 * time.Millisecond})
	a, b := r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	b.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "queued" })

	srv.Stop()
	// The queued turn resolves here once its deadline and the grace pass.
	all := b.Until(sessiontest.IsType("turn_end"))
	if end := sessiontest.LastOf(all, "turn_end"); end.Disposition != "expired" {
		t.Fatalf("queued turn with Redis down: %v", sessiontest.Types(all))
	}
	c := r.Dial()
	all = c.Until(sessiontest.IsType("prompt"))
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "closed" {
		t.Fatalf("new caller with Redis down: %v", sessiontest.Types(all))
	}
	if p := sessiontest.LastOf(all, "prompt"); p.Text != PromptText(Refusal{Stage: StageSession, Disposition: stages.Closed}) {
		t.Fatalf("prompt %+v", p)
	}
	ready := func() int {
		resp, err := r.HTTP.Client().Get(r.HTTP.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := ready(); code != 503 {
		t.Fatalf("readyz %d with Redis down", code)
	}
	if sn := r.stage(StageSession); !sn.Closed {
		t.Fatalf("session stage shown open with Redis down: %+v", sn)
	}

	srv.Restart()
	sessiontest.WaitFor(t, "readyz 200", func() bool { return ready() == 200 })
	// A connection go-redis failed to dial while Redis was down may still
	// be in its backoff once readyz's has come back: a caller that meets
	// it is refused Closed (and told so), and a next one is admitted.
	var d *sessiontest.Client
	sessiontest.WaitFor(t, "a caller admitted after recovery", func() bool {
		c := r.Dial()
		if c.Expect("session").Disposition == "admitted" {
			d = c
			return true
		}
		c.Conn.CloseNow()
		return false
	})
	d.Send(map[string]any{"type": "turn", "id": "d1", "text": "x"})
	if end := sessiontest.LastOf(d.Until(sessiontest.IsType("turn_end")), "turn_end"); end.Disposition != "completed" {
		t.Fatalf("after recovery %+v", end)
	}
}
