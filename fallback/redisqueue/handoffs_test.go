package redisqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

const handoffTTL = 2 * time.Second

func handoffConfig() fallback.Config {
	cfg := workerConfig()
	cfg.HandoffSlots = 1
	cfg.HandoffQueue = 4
	cfg.HandoffMaxWait = time.Minute
	return cfg
}

// replica is one frontdoor's fallback service on the shared Redis, with its
// /v1/agents endpoint.
type replica struct {
	svc *fallback.Service
	url string
}

func newReplica(t *testing.T, srv *redistest.Server, cfg fallback.Config) replica {
	t.Helper()
	svc, err := fallback.New(context.Background(), cfg, nil, nil,
		fallback.WithStore(redisqueue.NewCallbackStore(srv.Client(t), "callbacks", cfg)),
		fallback.WithHandoffQueue(redisqueue.NewHandoffQueue(srv.Client(t), "handoffs", cfg, handoffTTL)))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.AgentHandler(nil))
	t.Cleanup(func() { hs.Close(); svc.Close() })
	return replica{svc: svc, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
}

type agentMsg struct {
	Type        string             `json:"type"`
	Ref         string             `json:"ticket"`
	Code        string             `json:"code"`
	Disposition stages.Disposition `json:"disposition"`
	Handoffs    []struct {
		Ref      string `json:"ticket"`
		Call     string `json:"call"`
		Position int    `json:"position"`
		Agent    string `json:"agent"`
	} `json:"handoffs"`
}

// agentConn is a human agent's WebSocket on one replica.
type agentConn struct {
	t  *testing.T
	c  *websocket.Conn
	in chan agentMsg
}

func dialAgent(t *testing.T, r replica, id string) *agentConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, _, err := websocket.Dial(ctx, r.url+"?agent="+id, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	a := &agentConn{t: t, c: c, in: make(chan agentMsg, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(a.in)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m agentMsg
			if json.Unmarshal(b, &m) == nil {
				a.in <- m
			}
		}
	}()
	t.Cleanup(func() { c.CloseNow(); cancel(); <-done })
	return a
}

func (a *agentConn) send(typ, ref string) {
	a.t.Helper()
	b, _ := json.Marshal(map[string]string{"type": typ, "ticket": ref})
	if err := a.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		a.t.Fatal(err)
	}
}

// until reads messages until ok accepts one.
func (a *agentConn) until(what string, ok func(agentMsg) bool) agentMsg {
	a.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, open := <-a.in:
			if !open {
				a.t.Fatalf("agent connection closed waiting for %s", what)
			}
			if ok(m) {
				return m
			}
		case <-deadline:
			a.t.Fatalf("no %s", what)
		}
	}
}

func (a *agentConn) reply(typ string) agentMsg {
	a.t.Helper()
	return a.until(typ, func(m agentMsg) bool { return m.Type == typ || m.Type == "error" })
}

// A caller held by replica A is seen, claimed and completed by an agent on
// replica B; the claim slots are the fleet's (an agent on A finds them
// busy); the caller's handoff on A resolves Completed by B's agent.
func TestHandoffAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := handoffConfig()
	a, b := newReplica(t, srv, cfg), newReplica(t, srv, cfg)
	ctx := context.Background()
	ha, d, err := a.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-on-a", Turn: "t1", Summary: "billing"})
	if err != nil || d != stages.Queued {
		t.Fatalf("request on A: %v %v", d, err)
	}
	hb, d, err := b.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-on-b", Turn: "t1"})
	if err != nil || d != stages.Queued {
		t.Fatalf("request on B: %v %v", d, err)
	}
	if p, ok := hb.Position(); !ok || p != 2 {
		t.Fatalf("B's caller is at %d %v, want 2 (A's asked first)", p, ok)
	}

	agentB := dialAgent(t, b, "agent-b")
	agentB.until("both callers listed", func(m agentMsg) bool {
		return m.Type == "waiting" && len(m.Handoffs) == 2 && m.Handoffs[0].Call == "call-on-a" && m.Handoffs[0].Position == 1
	})
	agentB.send("claim", hb.Ref)
	if m := agentB.reply("claimed"); m.Code != "not_next" {
		t.Fatalf("claiming the second: %+v", m)
	}
	agentB.send("claim", "")
	if m := agentB.reply("claimed"); m.Type != "claimed" || m.Ref != ha.Ref {
		t.Fatalf("claim: %+v", m)
	}
	agentA := dialAgent(t, a, "agent-a")
	agentA.until("the claim seen on A", func(m agentMsg) bool {
		return m.Type == "waiting" && len(m.Handoffs) == 2 && m.Handoffs[1].Agent == "agent-b"
	})
	agentA.send("claim", "")
	if m := agentA.reply("claimed"); m.Code != "slots_busy" {
		t.Fatalf("claim past the fleet's one slot: %+v", m)
	}
	agentA.send("ack", ha.Ref)
	if m := agentA.reply("resolved"); m.Code != "not_yours" {
		t.Fatalf("ack by another agent: %+v", m)
	}
	agentB.send("ack", ha.Ref)
	if m := agentB.reply("resolved"); m.Type != "resolved" || m.Disposition != stages.Completed {
		t.Fatalf("ack: %+v", m)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := ha.Wait(wctx)
	if err != nil || out.Disposition != stages.Completed || out.Agent != "agent-b" {
		t.Fatalf("A's caller: %+v %v", out, err)
	}
	// B's caller moves up, on B and for A's agent.
	agentA.until("B's caller first", func(m agentMsg) bool {
		return m.Type == "waiting" && len(m.Handoffs) == 1 && m.Handoffs[0].Call == "call-on-b" && m.Handoffs[0].Position == 1
	})
	agentA.send("claim", "")
	if m := agentA.reply("claimed"); m.Ref != hb.Ref {
		t.Fatalf("claim on A: %+v", m)
	}
	agentA.send("release", hb.Ref)
	agentA.reply("released")
	hb.Cancel()
	if out := hb.Outcome(); out.Disposition != stages.Cancelled {
		t.Fatalf("cancelled: %+v", out)
	}
	sn := b.svc.Snapshot(prompt.KindHandoff)
	for deadline := time.Now().Add(5 * time.Second); sn.Queued+sn.Leased+int(3-sn.Ledger.Offered) != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		sn = b.svc.Snapshot(prompt.KindHandoff)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil || sn.Queued+sn.Leased != 0 || sn.Ledger.Completed != 1 {
		t.Fatalf("fleet ledger %+v: %v", sn, err)
	}
}

// A claim whose agent's replica died (nobody renews it) goes back to its
// place once idle for the TTL; another agent claims it and the dead
// attempt is fenced. A caller whose replica died (nobody renews it) is
// cancelled after the TTL and leaves the agents' list.
func TestHandoffDeadReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := handoffConfig()
	a := newReplica(t, srv, cfg)
	ctx := context.Background()
	ha, _, err := a.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "call-on-a", Turn: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	dead := redisqueue.NewHandoffQueue(srv.Client(t), "handoffs", cfg, handoffTTL)
	e, err := dead.Claim(ctx, "agent-dead", "", time.Now())
	if err != nil || e.Ref != ha.Ref || e.Attempt != 1 {
		t.Fatalf("claim by the replica that dies: %+v %v", e, err)
	}
	// A caller on a replica that dies at once: enqueued, never renewed.
	gone, d, err := dead.Enqueue(ctx, fallback.HandoffEntry{Ref: "ho_gone", Call: "call-gone", Turn: "t1", Born: time.Now()})
	if err != nil || d != stages.Queued || gone.Position != 1 {
		t.Fatalf("enqueue: %+v %v %v", gone, d, err)
	}

	agentA := dialAgent(t, a, "agent-a")
	agentA.until("the dead claim back at its place", func(m agentMsg) bool {
		return m.Type == "waiting" && len(m.Handoffs) == 1 && m.Handoffs[0].Ref == ha.Ref && m.Handoffs[0].Position == 1
	})
	agentA.send("claim", "")
	if m := agentA.reply("claimed"); m.Ref != ha.Ref {
		t.Fatalf("reclaim: %+v", m)
	}
	if _, err := dead.Ack(ctx, ha.Ref, 1, time.Now()); !errors.Is(err, fallback.ErrHandoffLost) {
		t.Fatalf("the dead replica's attempt: %v", err)
	}
	got, err := dead.Get(ctx, []string{"ho_gone", ha.Ref})
	if err != nil || len(got) != 2 || got[0].State != fallback.HandoffCancelled || got[1].Attempt != 2 || got[1].Agent != "agent-a" {
		t.Fatalf("entries: %+v %v", got, err)
	}
	// The live claim is renewed: it outlives the TTL.
	time.Sleep(2 * handoffTTL)
	agentA.send("ack", ha.Ref)
	if m := agentA.reply("resolved"); m.Disposition != stages.Completed {
		t.Fatalf("ack after 2 TTLs: %+v", m)
	}
	sn, err := dead.Snapshot(ctx, time.Now())
	if err != nil || sn.Ledger.Lost != 1 || sn.Ledger.Check(sn.Queued, sn.Leased) != nil {
		t.Fatalf("ledger %+v %v", sn.Ledger, err)
	}
}

// With Redis away a handoff is refused Closed and a callback is not
// established (the caller hears the failed prompt), never accepted
// unbounded; the offers are withdrawn.
func TestFallbackFleetRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv, handoffConfig())
	srv.Stop()
	ctx := context.Background()
	if h, d, err := a.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: "c1", Turn: "t1"}); h != nil || d != stages.Closed || err != nil {
		t.Fatalf("handoff with Redis down: %v %v %v", h, d, err)
	}
	_, err := a.svc.RequestCallback(ctx, fallback.CallbackRequest{Call: "c1", Turn: "t1", Number: "+15550100", Consent: true})
	if !errors.Is(err, fallback.ErrNotEstablished) {
		t.Fatalf("callback with Redis down: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(a.svc.Available()) != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if av := a.svc.Available(); len(av) != 0 {
		t.Fatalf("offers with Redis down: %v", av)
	}
}
