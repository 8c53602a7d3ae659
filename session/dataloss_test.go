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

// TestFleetDataLossCallsGoOn: every stage on a real redis-server, which is
// restarted without persistence while a call is in progress. The call's
// session lease is granted again at its next renewal, and once the
// warm-up (one lease TTL) has passed its turns complete again (they were
// refused stale for as long as the call lasted, issue 15); a new caller is
// admitted too.
func TestFleetDataLossCallsGoOn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = 900 * time.Millisecond
	rdb := srv.Client(t)
	var gates []stages.Gate
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.NewGate = func(name string, l stages.Limits, clk clock.Clock) (stages.Gate, error) {
			st, err := redisstage.New(rdb, name, l, redisstage.Options{LeaseTTL: ttl})
			if err != nil {
				return nil, err
			}
			d := redisstage.NewDispatcher(st, redisstage.DispatcherOptions{Clock: clk, Poll: 20 * time.Millisecond, Grace: 200 * time.Millisecond})
			gates = append(gates, d)
			return d, nil
		}
	})
	ready := func() bool {
		for _, g := range gates {
			if g.Ready(context.Background()) != nil {
				return false
			}
		}
		return true
	}
	sessiontest.WaitFor(t, "the stages warmed up", ready)
	a := r.Admitted()
	a.Send(map[string]any{"type": "turn", "id": "a1", "text": "x"})
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("before: %+v", end)
	}

	srv.Stop()
	srv.Restart()
	sessiontest.WaitFor(t, "the warm-up after data loss", ready)
	// The call in progress goes on: its session lease is Redis's again.
	sessionKey := "fd:{" + StageSession + "}:lease"
	sessiontest.WaitFor(t, "the session lease granted again", func() bool { return rdb.ZCard(context.Background(), sessionKey).Val() == 1 })
	a.Send(map[string]any{"type": "turn", "id": "a2", "text": "x"})
	all := a.Until(sessiontest.IsType("turn_end"))
	if end := all[len(all)-1]; end.Disposition != "completed" {
		t.Fatalf("a turn of the call in progress after data loss: %v", sessiontest.Types(all))
	}
	b := r.Admitted()
	b.Send(map[string]any{"type": "turn", "id": "b1", "text": "x"})
	if end := b.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("new call: %+v", end)
	}
	if n := rdb.ZCard(context.Background(), sessionKey).Val(); n != 2 {
		t.Fatalf("%d session leases in Redis, want 2", n)
	}
}
