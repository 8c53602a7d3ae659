package fallback_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// queueModes are the Service's two ways to its queues, which differ only in
// what New is given: nothing (this process's claim gates over the SQLite
// store) or the fleet's queues on a real redis-server started here.
var queueModes = []struct {
	name string
	opts func(t *testing.T, cfg fallback.Config) []fallback.Option
}{
	{"local", func(*testing.T, fallback.Config) []fallback.Option { return nil }},
	{"redis", func(t *testing.T, cfg fallback.Config) []fallback.Option {
		rdb := redistest.Start(t).Client(t)
		return []fallback.Option{
			fallback.WithStore(redisqueue.NewCallbackStore(rdb, "callbacks", cfg)),
			// Liveness is on Redis's clock, the test's on a manual one:
			// a TTL longer than the test keeps every caller alive.
			fallback.WithHandoffQueue(redisqueue.NewHandoffQueue(rdb, "handoffs", cfg, time.Hour)),
		}
	}},
}

// waitFor polls cond: a fleet's queue answers the Service's rounds, which
// run beside the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueueScenarioBothModes runs one scenario over the Service in both
// modes: callbacks and handoffs are offered, accepted up to the bound and
// refused past it (and the offers say so), claimed oldest first up to the
// slots, finished, and the unclaimed rest expires at its maximum wait.
func TestQueueScenarioBothModes(t *testing.T) {
	for _, m := range queueModes {
		t.Run(m.name, func(t *testing.T) {
			clock := stagestest.NewClock(epoch)
			cfg := testConfig(t.TempDir()) // slots 1, queues 2
			s := newService(t, cfg, clock, m.opts(t, cfg)...)
			t.Run("callback", func(t *testing.T) { callbackScenario(t, s, clock) })
			t.Run("handoff", func(t *testing.T) { handoffScenario(t, s, clock) })
		})
	}
}

func callbackScenario(t *testing.T, s *fallback.Service, clock *stagestest.Clock) {
	ctx := context.Background()
	if !slices.Contains(s.Available(), prompt.KindCallback) {
		t.Fatal("an empty callback queue is not offered")
	}
	var refs []string
	for _, call := range []string{"c1", "c2"} {
		res, err := s.RequestCallback(ctx, request(call, "t1", "+15550100"))
		if err != nil || res.Disposition != stages.Queued || res.Ref == "" {
			t.Fatalf("request %s = %+v, %v", call, res, err)
		}
		refs = append(refs, res.Ref)
	}
	if res, err := s.RequestCallback(ctx, request("c3", "t1", "+15550100")); err != nil || res.Disposition != stages.Overloaded {
		t.Fatalf("past the bound = %+v, %v; want overloaded", res, err)
	}
	waitFor(t, "the full queue no longer offered", func() bool { return !slices.Contains(s.Available(), prompt.KindCallback) })

	c, err := s.ClaimCallback(ctx, "op")
	if err != nil || c.Ref != refs[0] || c.Number != "+15550100" || c.Attempt != 1 {
		t.Fatalf("claim = %+v, %v; want the oldest, %s", c, err, refs[0])
	}
	if _, err := s.ClaimCallback(ctx, "op2"); !errors.Is(err, fallback.ErrSlotsBusy) {
		t.Fatalf("second claim with one slot: %v", err)
	}
	if _, err := s.FinishCallback(ctx, c.Ref, c.Attempt, fallback.StatusCompleted, "reached"); err != nil {
		t.Fatal(err)
	}

	clock.Advance(time.Hour + time.Second) // past -callback-max-wait
	waitFor(t, "the unclaimed callback expired", func() bool {
		got, err := s.Store().Get(ctx, refs[1])
		return err == nil && got.Status == fallback.StatusExpired
	})
	if _, err := s.ClaimCallback(ctx, "op"); !errors.Is(err, fallback.ErrNoneWaiting) {
		t.Fatalf("claim after expiry: %v", err)
	}
	waitFor(t, "the stage's ledger", func() bool {
		sn := s.Snapshot(prompt.KindCallback)
		return sn.Queued == 0 && sn.Leased == 0 && sn.Ledger.Completed == 1 && sn.Ledger.Expired == 1 && sn.Ledger.Refused.Overloaded == 1
	})
}

func handoffScenario(t *testing.T, s *fallback.Service, clock *stagestest.Clock) {
	ctx := context.Background()
	srv := httptest.NewServer(s.AgentHandler(nil))
	t.Cleanup(srv.Close)
	if !slices.Contains(s.Available(), prompt.KindHandoff) {
		t.Fatal("an empty handoff queue is not offered")
	}
	var hs []*fallback.Handoff
	for i, call := range []string{"h1", "h2"} {
		h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: call, Turn: "t1", Summary: "asked for a person"})
		if err != nil || d != stages.Queued {
			t.Fatalf("request %s = %v, %v", call, d, err)
		}
		if pos, ok := h.Position(); !ok || pos != i+1 {
			t.Fatalf("position of %s = %d, %v; want %d", call, pos, ok, i+1)
		}
		hs = append(hs, h)
	}
	if h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "h3", Turn: "t1"}); h != nil || err != nil || d != stages.Overloaded {
		t.Fatalf("past the bound = %v, %v, %v; want overloaded", h, d, err)
	}
	waitFor(t, "the full queue no longer offered", func() bool { return !slices.Contains(s.Available(), prompt.KindHandoff) })

	a := dialAgent(t, srv, "alice")
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 2 && m.Handoffs[0].Ref == hs[0].Ref })
	a.send("claim", hs[1].Ref) // not the head: the longest waiting goes first
	if m := a.nextAny(); m.Type != "error" || m.Code != "not_next" {
		t.Fatalf("claim of the second = %+v; want not_next", m)
	}
	a.send("claim", "")
	if m := a.next("claimed"); m.Ref != hs[0].Ref {
		t.Fatalf("claimed %q, want the head %q", m.Ref, hs[0].Ref)
	}
	a.send("ack", hs[0].Ref)
	if out, err := hs[0].Wait(ctx); err != nil || out.Disposition != stages.Completed || out.Agent != "alice" {
		t.Fatalf("outcome = %+v, %v", out, err)
	}

	clock.Advance(2*time.Minute + time.Millisecond) // past -handoff-max-wait
	<-hs[1].Done()
	if d := hs[1].Outcome().Disposition; d != stages.Expired {
		t.Fatalf("unclaimed handoff = %v, want expired", d)
	}
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 0 })
	waitFor(t, "the stage's ledger", func() bool {
		sn := s.Snapshot(prompt.KindHandoff)
		return sn.Queued == 0 && sn.Leased == 0 && sn.Ledger.Completed == 1 && sn.Ledger.Expired == 1 && sn.Ledger.Refused.Overloaded == 1
	})
}

// nextAny reads the next message that is not a list update.
func (a *agentClient) nextAny() agentMsg {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if m, _ := a.read(ctx, "a message"); m.Type != "waiting" {
			return m
		}
	}
}
