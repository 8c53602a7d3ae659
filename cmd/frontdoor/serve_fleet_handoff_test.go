package main

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// agentWS is a human agent on one replica's /v1/agents.
type agentWS struct {
	conn *websocket.Conn
	ctx  context.Context
}

type agentEvent struct {
	Type        string `json:"type"`
	Ref         string `json:"ticket"`
	Code        string `json:"code"`
	Disposition string `json:"disposition"`
	Handoffs    []struct {
		Ref      string `json:"ticket"`
		Position int    `json:"position"`
		Agent    string `json:"agent"`
	} `json:"handoffs"`
}

func dialAgentWS(ctx context.Context, t *testing.T, r *replica, id string) *agentWS {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/v1/agents?agent="+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return &agentWS{conn: c, ctx: ctx}
}

func (a *agentWS) send(t *testing.T, typ, ref string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": typ, "ticket": ref})
	if err := a.conn.Write(a.ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func (a *agentWS) until(t *testing.T, what string, ok func(agentEvent) bool) agentEvent {
	t.Helper()
	for {
		_, b, err := a.conn.Read(a.ctx)
		if err != nil {
			t.Fatalf("agent waiting for %s: %v", what, err)
		}
		var m agentEvent
		if json.Unmarshal(b, &m) == nil && ok(m) {
			return m
		}
	}
}

// TestFleetHandoffAgentReplicaKilled runs two frontdoor serve processes on
// one Redis. A caller refused on replica A asks for a human; an agent on
// replica B sees and claims that handoff; B is killed with kill -9. The
// handoff is not lost: it stays claimed (by the dead agent) until the
// fleet's TTL has passed, then comes back first in the queue on A, where
// another agent claims and completes it, and the caller on A hears who
// took the call.
func TestFleetHandoffAgentReplicaKilled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	bin := buildOnce(t)
	const ttl = 2 * time.Second
	args := []string{"-store", srv.URL(0), "-store-lease-ttl", ttl.String(), "-store-timeout", "500ms", "-drain-timeout", "1s",
		"-model-slots", "1", "-model-queue", "1", "-synth", "stub", "-recognize", "stub", "-stub-model-delay", "1h", "-pace=false"}
	a, b := startReplica(t, bin, args...), startReplica(t, bin, args...)
	waitReady(t, 200, a, b)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Two calls hold the fleet's model slot and its one waiting place; the
	// third caller's turn is refused and offered a human.
	var caller *fleetCall
	for i := range 3 {
		c, _ := dialCall(ctx, t, a)
		if c == nil {
			t.Fatal("no call")
		}
		defer c.conn.CloseNow()
		if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
			t.Fatalf("session: %v %v", m, err)
		}
		if err := c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"t`+string(rune('0'+i))+`","text":"hold"}`)); err != nil {
			t.Fatal(err)
		}
		caller = c
	}
	if m, _, err := caller.until("offer", false); err != nil || !contains(anyStrings(m["kinds"]), "handoff") {
		t.Fatalf("offer: %v %v", m, err)
	}
	if err := caller.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"handoff"}`)); err != nil {
		t.Fatal(err)
	}
	m, _, err := caller.until("handoff", false)
	if err != nil || m["disposition"] != "queued" || m["position"] != 1.0 {
		t.Fatalf("handoff on A: %v %v", m, err)
	}
	ref, _ := m["ticket"].(string)

	onB := dialAgentWS(ctx, t, b, "agent-b")
	onB.until(t, "the caller of A listed on B", func(e agentEvent) bool {
		return e.Type == "waiting" && len(e.Handoffs) == 1 && e.Handoffs[0].Ref == ref
	})
	// The claim's TTL runs from the claim (or a later renewal by B), never
	// from before it was sent: the bound below is taken then, not at the
	// kill, which comes after the last renewal.
	claimed := time.Now()
	onB.send(t, "claim", "")
	if e := onB.until(t, "claimed", func(e agentEvent) bool { return e.Type != "waiting" }); e.Type != "claimed" || e.Ref != ref {
		t.Fatalf("claim on B: %+v", e)
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	onA := dialAgentWS(ctx, t, a, "agent-a")
	e := onA.until(t, "the list on A", func(e agentEvent) bool { return e.Type == "waiting" })
	if time.Since(claimed) < ttl && (len(e.Handoffs) != 1 || e.Handoffs[0].Agent != "agent-b") {
		t.Fatalf("before the TTL the dead agent's claim must still hold: %+v", e)
	}
	onA.until(t, "the handoff back in the queue", func(e agentEvent) bool {
		return e.Type == "waiting" && len(e.Handoffs) == 1 && e.Handoffs[0].Position == 1
	})
	if back := time.Since(claimed); back < ttl {
		t.Fatalf("the claim came back %v after it was taken, before the TTL %v", back, ttl)
	}
	onA.send(t, "claim", "")
	if e := onA.until(t, "claimed", func(e agentEvent) bool { return e.Type != "waiting" }); e.Type != "claimed" || e.Ref != ref {
		t.Fatalf("claim on A: %+v", e)
	}
	onA.send(t, "ack", ref)
	if e := onA.until(t, "resolved", func(e agentEvent) bool { return e.Type == "resolved" || e.Type == "error" }); e.Type != "resolved" {
		t.Fatalf("ack on A: %+v", e)
	}
	m, _, err = caller.until("handoff", true)
	if err != nil || m["disposition"] != "completed" || m["agent"] != "agent-a" {
		t.Fatalf("the caller on A: %v %v", m, err)
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
