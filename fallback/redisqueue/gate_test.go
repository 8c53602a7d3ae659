package redisqueue_test

import (
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

func TestCallbackGateConformance(t *testing.T) {
	srv := redistest.Start(t)
	var seq atomic.Int64
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		return redisqueue.NewCallbackGate(srv.Client(t), fmt.Sprint("gate", seq.Add(1)), l, clock, "operator", time.Hour)
	})
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
