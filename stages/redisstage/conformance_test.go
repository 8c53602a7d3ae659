package redisstage_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var stageSeq atomic.Int64

// newStage returns a fresh stage on srv: a new name keeps tests apart.
func newStage(t *testing.T, srv *redistest.Server, l stages.Limits, opt redisstage.Options) *redisstage.Store {
	t.Helper()
	if opt.Warmup == 0 {
		opt.Warmup = -1
	}
	s, err := redisstage.New(srv.Client(t), fmt.Sprint("test", stageSeq.Add(1)), l, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedisConformance(t *testing.T) {
	srv := redistest.Start(t)
	stagestest.RunStore(t, func(t *testing.T, l stages.Limits) admit.Store {
		return newStage(t, srv, l, redisstage.Options{})
	})
}

func TestRedisGateConformance(t *testing.T) {
	srv := redistest.Start(t)
	stagestest.RunGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.Gate {
		return redisstage.NewDispatcher(newStage(t, srv, l, redisstage.Options{}), redisstage.DispatcherOptions{Clock: clock})
	})
}

func TestRedisClaimGateConformance(t *testing.T) {
	srv := redistest.Start(t)
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		return redisstage.NewDispatcher(newStage(t, srv, l, redisstage.Options{}), redisstage.DispatcherOptions{Clock: clock, Claim: true})
	})
}
