package stagestest_test

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
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

// The in-process gates are run as a server builds them: through the public
// constructors.
func TestLocalGateConformance(t *testing.T) {
	stagestest.RunGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) stages.Gate {
		g, err := stages.NewGate(l, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	})
}

func TestLocalClaimGateConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		g, err := claim.New(l, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	})
}
