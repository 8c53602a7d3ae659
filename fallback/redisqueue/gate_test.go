package redisqueue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestHandoffGateConformance and TestCallbackGateConformance run the claim
// gate contract on the fleet's handoff and callback queues, the Lua scripts
// fallback uses in fleet mode, against a real redis-server on loopback: the
// same suite the in-process queues (fallback/internal/claimq) and
// redisstage's claim gate pass.
func TestHandoffGateConformance(t *testing.T) {
	srv := redistest.Start(t)
	var seq atomic.Int64
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		return redisqueue.NewHandoffGate(srv.Client(t), fmt.Sprint("gate", seq.Add(1)), l, clock, "agent", time.Minute)
	})
}

// The callback queues keep a booked callback until a claim or its deadline
// (stagestest.Kept): NewCallbackGate is NewCallbackGateOn over the fleet's
// queue, so this runs the Service's callback contract on Redis.
func TestCallbackGateConformance(t *testing.T) {
	srv := redistest.Start(t)
	var seq atomic.Int64
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		return redisqueue.NewCallbackGate(srv.Client(t), fmt.Sprint("gate", seq.Add(1)), l, clock, "operator", time.Hour)
	}, stagestest.Kept())
}

// TestLocalCallbackQueueConformance runs the same suite on this process's
// callback queue over a real SQLite file, the default of fallback.New,
// through the gate adapter the fleet's passes (NewCallbackGateOn, over
// fallback.CallbackQueue alone).
func TestLocalCallbackQueueConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		ctx := context.Background()
		st, err := fallback.OpenSQLite(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		q, err := fallback.NewLocalCallbackQueue(ctx, st, l, time.Hour, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(q.Stop)
		return redisqueue.NewCallbackGateOn(q, l, clock, "operator")
	}, stagestest.Kept())
}

// TestLocalHandoffQueueConformance runs the same suite on this process's
// handoff queue through the very gate adapter the fleet's passes
// (NewHandoffGateOn, over fallback.HandoffQueue alone): the contract
// fallback.Service asks its handoff queue by holds in both modes.
func TestLocalHandoffQueueConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		q, err := fallback.NewLocalHandoffQueue(l, clock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(q.Stop)
		return redisqueue.NewHandoffGateOn(q, l, clock, "agent")
	})
}
