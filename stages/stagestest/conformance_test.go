package stagestest_test

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestLocalConformance(t *testing.T) {
	stagestest.RunStore(t, func(t *testing.T, l stages.Limits) admit.Store {
		c, err := admit.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return admit.LocalStore(c)
	})
}

func TestLocalGateConformance(t *testing.T) {
	stagestest.RunGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.Gate {
		c, err := admit.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return admit.LocalGate(admit.NewDispatcher(c, clock))
	})
}

func TestLocalClaimGateConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.ClaimGate {
		c, err := admit.New(l)
		if err != nil {
			t.Fatal(err)
		}
		return admit.LocalClaimGate(admit.NewDispatcher(c, clock, admit.ClaimOnly()))
	})
}
