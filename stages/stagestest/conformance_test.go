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
