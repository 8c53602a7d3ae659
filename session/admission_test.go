package session

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestModelOverload(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Model = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
		s.ModelDelay = 300 * time.Millisecond
	})
	a, b, c := r.Admitted(), r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	q := b.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "queued" })
	if got := sessiontest.LastOf(q, "disposition"); got.Position != 1 || got.Stage != StageModel {
		t.Fatalf("queued %+v", got)
	}
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "x"})
	all := c.Until(sessiontest.IsType("turn_end"))
	d, p, end := sessiontest.LastOf(all, "disposition"), sessiontest.LastOf(all, "prompt"), sessiontest.LastOf(all, "turn_end")
	if d.Disposition != "overloaded" || d.Stage != StageModel || p.Reason != "overloaded" || p.Stage != StageModel || p.Text == "" ||
		end.Disposition != "overloaded" || end.Stage != StageModel {
		t.Fatalf("overload: %v %+v %+v %+v", sessiontest.Types(all), d, p, end)
	}
	for _, cl := range []*sessiontest.Client{a, b} {
		if end := sessiontest.LastOf(cl.Until(sessiontest.IsType("turn_end")), "turn_end"); end.Disposition != "completed" {
			t.Fatalf("turn_end %+v", end)
		}
	}
	if s := r.stage(StageModel); s.Ledger.Refused.Overloaded != 1 {
		t.Fatalf("ledger %+v", s.Ledger)
	}
}

func TestModelQueueExpiry(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Model = stages.Limits{Slots: 1, Waiting: 4, MaxAge: 100 * time.Millisecond}
		s.ModelDelay = 500 * time.Millisecond
	})
	a, b := r.Admitted(), r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	all := b.Until(sessiontest.IsType("turn_end"))
	want := []string{"disposition:model:queued", "disposition:model:expired", "prompt:", "turn_end:expired"}
	got := sessiontest.Types(all)
	if len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[3] != want[3] || sessiontest.LastOf(all, "prompt").Reason != "expired" {
		t.Fatalf("expiry sequence %v", got)
	}
	// Issue 15, case 2: nothing was ever worked on, and the prompt says so.
	if p := sessiontest.LastOf(all, "prompt"); p.Text != prompt.For(StageModel, stages.Expired, nil).Text ||
		!strings.Contains(p.Text, "could not get to your question in time") || strings.Contains(p.Text, "stopped") {
		t.Fatalf("queued-then-expired prompt %q", p.Text)
	}
	// Born includes age_ms: a turn already too old expires at the offer.
	c := r.Admitted()
	c.Send(map[string]any{"type": "turn", "id": "c1", "text": "x", "age_ms": 150})
	all = c.Until(sessiontest.IsType("turn_end"))
	if end := sessiontest.LastOf(all, "turn_end"); end.Disposition != "expired" || end.Stage != StageModel {
		t.Fatalf("aged turn %v", sessiontest.Types(all))
	}
	if s := r.stage(StageModel); s.Ledger.Expired != 1 || s.Ledger.Refused.Expired != 1 {
		t.Fatalf("ledger %+v", s.Ledger)
	}
}

func TestSessionQueue(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
	})
	a := r.Admitted()
	b := r.Dial()
	q := b.Until(sessiontest.IsType("prompt"))
	if s := sessiontest.LastOf(q, "session"); s.Disposition != "queued" || s.Position != 1 {
		t.Fatalf("queued %v %+v", sessiontest.Types(q), s)
	}
	c := r.Dial()
	all := c.Until(sessiontest.IsType("prompt"))
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "overloaded" || sessiontest.LastOf(all, "prompt").Reason != "overloaded" {
		t.Fatalf("overloaded %v", sessiontest.Types(all))
	}
	if _, err := c.Read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("close %v, want 1013", err)
	}
	if v := r.stage(StageSession); len(v.Waiting) != 1 || v.Waiting[0].Position != 1 {
		t.Fatalf("waiting %+v", v.Waiting)
	}
	a.Send(map[string]any{"type": "hangup"})
	if s := b.Expect("session"); s.Disposition != "admitted" {
		t.Fatalf("b %+v", s)
	}
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	if end := b.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("b turn %+v", end)
	}
}

func TestSessionExpiry(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 60 * time.Millisecond}
	})
	r.Admitted()
	b := r.Dial()
	all := b.Until(func(m sessiontest.Msg) bool { return m.Type == "session" && m.Disposition != "queued" })
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "expired" {
		t.Fatalf("%v", sessiontest.Types(all))
	}
	if p := b.Expect("prompt"); p.Reason != "expired" || p.Stage != StageSession {
		t.Fatalf("prompt %+v", p)
	}
	if _, err := b.Read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("close %v, want 1013", err)
	}
}

func TestDrain(t *testing.T) {
	r := newRig(t, func(c *Config, s *stub.Settings) {
		s.ModelDelay = 100 * time.Millisecond
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	drained := make(chan error, 1)
	go func() { drained <- r.Engine.Drain(context.Background()) }()
	sessiontest.WaitFor(t, "draining", func() bool { return !r.Engine.Ready() })
	resp, err := http.Get(r.HTTP.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d while draining", resp.StatusCode)
	}
	n := r.Dial()
	all := n.Until(sessiontest.IsType("prompt"))
	if s := sessiontest.LastOf(all, "session"); s.Disposition != "closed" {
		t.Fatalf("new caller while draining: %v", sessiontest.Types(all))
	}
	if _, err := n.Read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("close %v", err)
	}
	// The call in progress goes on: its running turn completes...
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("running turn %+v", end)
	}
	// ...new work is refused as closed...
	a.Send(map[string]any{"type": "turn", "id": "a2", "text": "x"})
	if end := a.Expect("turn_end"); end.Disposition != "closed" {
		t.Fatalf("turn while draining %+v", end)
	}
	select {
	case err := <-drained:
		t.Fatalf("drain ended with a call in progress: %v", err)
	default:
	}
	// ...and the drain ends when the call does.
	a.Send(map[string]any{"type": "hangup"})
	if _, err := a.Read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("hangup close %v", err)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}

func TestDrainTimeout(t *testing.T) {
	r := newRig(t)
	a := r.Admitted()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Engine.Drain(ctx); err != ErrDrainTimeout {
		t.Fatalf("drain %v", err)
	}
	if _, err := a.Read(); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("close %v, want 1001", err)
	}
}

// TestDisconnectMidTurn: a caller that vanishes mid-turn releases every
// lease, each only after its backend returned, and leaves no goroutine
// (goleak in TestMain).
func TestDisconnectMidTurn(t *testing.T) {
	// The stub's delays run on a manual clock: its cleanup lasts until
	// the test moves the clock, however slow the machine.
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	r := newRig(t, func(c *Config, s *stub.Settings) {
		s.Clock, s.ModelDelay, s.CleanupDelay = clock, time.Hour, 100*time.Millisecond
	})
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "disposition" && m.Disposition == "admitted" })
	// Gone once the model's work has started: before that, the lease is
	// released at once, with no cleanup to wait for.
	sessiontest.WaitFor(t, "the model running", func() bool { return r.Model.Running() == 1 })
	a.Conn.CloseNow()
	sessiontest.WaitFor(t, "cancel", func() bool { return r.stage(StageModel).CleanupPending == 1 })
	if s := r.stage(StageSession); s.Leased != 1 {
		t.Fatalf("session lease released before the model's cleanup: %+v", s)
	}
	sessiontest.WaitFor(t, "call end", func() bool {
		clock.Advance(10 * time.Millisecond) // the cleanup's timer may not be armed yet
		return r.Engine.Calls() == 0
	})
	if r.Model.Running() != 0 {
		t.Fatal("call ended with its backend still running")
	}
	for _, name := range []string{StageSession, StageModel, StageSynthesis} {
		s := r.stage(name)
		if s.Leased != 0 || s.Queued != 0 || s.Owners != 0 || s.CleanupPending != 0 {
			t.Fatalf("%s: %+v", name, s)
		}
	}
}
