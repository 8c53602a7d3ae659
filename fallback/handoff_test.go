package fallback_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

type agentMsg struct {
	Type        string `json:"type"`
	Ref         string `json:"ticket"`
	Disposition string `json:"disposition"`
	Code        string `json:"code"`
	Handoffs    []struct {
		Ref      string `json:"ticket"`
		Position int    `json:"position"`
		Agent    string `json:"agent"`
	} `json:"handoffs"`
}

type agentClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialAgent(t *testing.T, srv *httptest.Server, id string) *agentClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/agents?agent="+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return &agentClient{t: t, c: c}
}

func (a *agentClient) send(typ, ref string) {
	a.t.Helper()
	b, _ := json.Marshal(map[string]string{"type": typ, "ticket": ref})
	if err := a.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		a.t.Fatal(err)
	}
}

// next reads until a message of type typ (skipping list updates when
// another type is wanted).
func (a *agentClient) next(typ string) agentMsg {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		m, b := a.read(ctx, typ)
		if m.Type == typ {
			return m
		}
		if m.Type == "error" {
			a.t.Fatalf("waiting for %s: got error %s", typ, b)
		}
	}
}

// read decodes the agent's next message (and returns it raw), waiting
// for what.
func (a *agentClient) read(ctx context.Context, what string) (agentMsg, []byte) {
	a.t.Helper()
	_, b, err := a.c.Read(ctx)
	if err != nil {
		a.t.Fatalf("waiting for %s: %v", what, err)
	}
	var m agentMsg
	if err := json.Unmarshal(b, &m); err != nil {
		a.t.Fatal(err)
	}
	return m, b
}

// waitList reads list updates until one satisfies ok.
func (a *agentClient) waitList(ok func(agentMsg) bool) agentMsg {
	a.t.Helper()
	for {
		if m := a.next("waiting"); ok(m) {
			return m
		}
	}
}

func handoffServer(t *testing.T, clock clock.Clock) (*fallback.Service, *httptest.Server) {
	t.Helper()
	s := newService(t, testConfig(t.TempDir()), clock)
	srv := httptest.NewServer(s.AgentHandler(nil))
	t.Cleanup(srv.Close)
	return s, srv
}

func TestHandoffClaimedAndAcknowledged(t *testing.T) {
	s, srv := handoffServer(t, stagestest.NewClock(epoch))
	ctx := context.Background()
	h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "c1", Turn: "t3", Summary: "asked about an order"})
	if err != nil || d != stages.Queued {
		t.Fatalf("request = %v, %v", d, err)
	}
	a := dialAgent(t, srv, "alice")
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 1 && m.Handoffs[0].Ref == h.Ref })
	a.send("claim", h.Ref)
	if m := a.next("claimed"); m.Ref != h.Ref {
		t.Fatalf("claimed %q", m.Ref)
	}
	select {
	case <-h.Done():
		t.Fatal("resolved before the agent acknowledged")
	default:
	}
	a.send("ack", h.Ref)
	out, err := h.Wait(ctx)
	if err != nil || out.Disposition != stages.Completed || out.Agent != "alice" {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	if m := a.next("resolved"); m.Disposition != "completed" {
		t.Fatalf("resolved %+v", m)
	}
	snap := s.Snapshot(prompt.KindHandoff)
	if snap.Leased != 0 || snap.Queued != 0 || snap.Ledger.Completed != 1 {
		t.Fatalf("stage: %+v", snap)
	}
	h.Cancel() // a late hang-up changes nothing: it resolved once
	if h.Outcome().Disposition != stages.Completed {
		t.Fatal("resolved twice")
	}
}

func TestHandoffUnclaimedExpires(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s, srv := handoffServer(t, clock)
	a := dialAgent(t, srv, "bob")
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 0 })
	h, _, _ := s.RequestHandoff(context.Background(), fallback.HandoffRequest{Call: "c1", Turn: "t1"})
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 1 })
	clock.Advance(2*time.Minute + time.Millisecond)
	<-h.Done()
	if d := h.Outcome().Disposition; d != stages.Expired {
		t.Fatalf("outcome %v, want expired", d)
	}
	a.waitList(func(m agentMsg) bool { return len(m.Handoffs) == 0 })
	a.send("claim", h.Ref)
	if m := a.next("error"); m.Code != "unknown_ticket" {
		t.Fatalf("claim after expiry: %+v", m)
	}
	if p := prompt.For(prompt.StageHandoff, stages.Expired, s.Available()); !strings.Contains(p.Text, "stopped looking") {
		t.Fatal(p.Text)
	}
}

func TestHandoffAbandonedByDisconnectingAgent(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s, srv := handoffServer(t, clock)
	ctx := context.Background()
	h, _, _ := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "c1", Turn: "t1"})
	a := dialAgent(t, srv, "carol")
	a.send("claim", h.Ref)
	a.next("claimed")
	a.c.Close(websocket.StatusNormalClosure, "gone") // mid-transfer

	b := dialAgent(t, srv, "dave")
	b.waitList(func(m agentMsg) bool {
		return len(m.Handoffs) == 1 && m.Handoffs[0].Position == 1 && m.Handoffs[0].Agent == ""
	})
	select {
	case <-h.Done():
		t.Fatalf("resolved as %v although it went back to the queue", h.Outcome().Disposition)
	default:
	}
	waitFor(t, "the abandoned claim counted", func() bool { return s.Stats().HandoffsReturned == 1 })
	if st := s.Stats(); st.HandoffsReturned != 1 || st.HandoffsAbandonedExpired != 0 {
		t.Fatalf("stats %+v", st)
	}
	b.send("claim", h.Ref)
	b.next("claimed")
	b.send("ack", h.Ref)
	if out, _ := h.Wait(ctx); out.Disposition != stages.Completed || out.Agent != "dave" {
		t.Fatalf("outcome %+v", out)
	}
	snap := s.Snapshot(prompt.KindHandoff)
	if snap.Ledger.ReleasedCancelled != 1 || snap.Ledger.Completed != 1 || snap.Leased != 0 {
		t.Fatalf("ledger %+v", snap.Ledger)
	}
}

func TestHandoffAbandonedTooLateExpires(t *testing.T) {
	clock := stagestest.NewClock(epoch)
	s, srv := handoffServer(t, clock)
	h, _, _ := s.RequestHandoff(context.Background(), fallback.HandoffRequest{Call: "c1", Turn: "t1"})
	a := dialAgent(t, srv, "erin")
	a.send("claim", h.Ref)
	a.next("claimed")
	clock.Advance(3 * time.Minute) // older than -handoff-max-wait while claimed
	a.c.Close(websocket.StatusNormalClosure, "gone")
	<-h.Done()
	if d := h.Outcome().Disposition; d != stages.Expired {
		t.Fatalf("outcome %v, want expired (not back in the queue)", d)
	}
	// The agent's side counts the abandoned claim once the queue's Release
	// has returned, which is after the caller's handle learned the outcome.
	waitFor(t, "the abandoned claim counted", func() bool { return s.Stats().HandoffsAbandonedExpired == 1 })
	if st := s.Stats(); st.HandoffsReturned != 0 || st.HandoffsAbandonedExpired != 1 {
		t.Fatalf("stats %+v", st)
	}
	if snap := s.Snapshot(prompt.KindHandoff); snap.Queued != 0 || snap.Leased != 0 {
		t.Fatalf("stage %+v", snap)
	}
}

func TestHandoffCancelledByCaller(t *testing.T) {
	s, srv := handoffServer(t, stagestest.NewClock(epoch))
	h, _, _ := s.RequestHandoff(context.Background(), fallback.HandoffRequest{Call: "c1", Turn: "t1"})
	a := dialAgent(t, srv, "frank")
	a.send("claim", h.Ref)
	a.next("claimed")
	h.Cancel()
	if d := h.Outcome().Disposition; d != stages.Cancelled {
		t.Fatalf("outcome %v", d)
	}
	if m := a.next("resolved"); m.Disposition != "cancelled" {
		t.Fatalf("agent told %+v", m)
	}
}

func TestHandoffQueueFull(t *testing.T) {
	s, _ := handoffServer(t, stagestest.NewClock(epoch))
	ctx := context.Background()
	for _, c := range []string{"c1", "c2"} {
		if _, d, _ := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: c, Turn: "t1"}); d != stages.Queued {
			t.Fatal(d)
		}
	}
	h, d, err := s.RequestHandoff(ctx, fallback.HandoffRequest{Call: "c3", Turn: "t1"})
	if h != nil || d != stages.Overloaded || err != nil {
		t.Fatalf("= %v, %v, %v; want overloaded", h, d, err)
	}
	p := prompt.For(prompt.StageHandoff, d, s.Available())
	for _, k := range p.Offer {
		if k == prompt.KindHandoff {
			t.Fatal("a full handoff queue offers handoff")
		}
	}
}
