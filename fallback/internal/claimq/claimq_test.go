package claimq

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestClaimQueueConformance runs the claim gate contract on the gate the
// Service's callback and handoff queues are made of, as they make it (with
// the expiry hook), in process. The fleet's gate runs the same suite on
// Redis (stages/redisstage).
func TestClaimQueueConformance(t *testing.T) {
	stagestest.RunClaimGate(t, func(t *testing.T, l stages.Limits, clock *stagestest.Clock) claim.Gate {
		q, err := New(l, clock)
		if err != nil {
			t.Fatal(err)
		}
		var expired []string
		q.OnExpire = func(ids []string) { expired = append(expired, ids...) }
		t.Cleanup(func() {
			s := q.Snapshot()
			if uint64(len(expired)) != s.Ledger.Expired {
				t.Errorf("told of %d expiries, the ledger counts %d", len(expired), s.Ledger.Expired)
			}
		})
		return q.g
	})
}
