package stagestest_test

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestLocalConformance(t *testing.T) {
	stagestest.RunStore(t, func(t *testing.T, l stages.Limits) stages.Store {
		c, err := stages.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return stages.Local(c)
	})
}

func TestLocalGateConformance(t *testing.T) {
	stagestest.RunGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.Gate {
		c, err := stages.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return stages.LocalGate(stages.NewDispatcher(c, clock))
	})
}

func TestLocalClaimGateConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.ClaimGate {
		c, err := stages.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return stages.LocalClaimGate(stages.NewDispatcher(c, clock, stages.ClaimOnly()))
	})
}
