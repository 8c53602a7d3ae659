package stages

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIdentitiesIndex runs the identity table's open-addressing index
// through many adds, retirements and evictions beside a Go map, at sizes
// where probe runs wrap around the end of the table and deletions shift
// entries back across it, checking after every operation that each
// retained identity is found from its home slot and nothing else is.
func TestIdentitiesIndex(t *testing.T) {
	for _, tc := range []struct{ live, tombs int }{{1, 1}, {1, 5}, {3, 12}, {8, 100}} {
		t.Run(fmt.Sprint(tc.live, "/", tc.tombs), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.live), uint64(tc.tombs)))
			ids := newIdentities(tc.live, tc.tombs)
			want := map[string]int32{} // retained identity -> entry
			var live []int32           // live entries
			next := 0
			for step := range 20000 {
				if len(live) < tc.live && (len(live) == 0 || rng.IntN(2) == 0) {
					id := fmt.Sprint("id-", next)
					next++
					h, at, dup := ids.find(id)
					if dup {
						t.Fatalf("step %d: %q found before it was added", step, id)
					}
					e := ids.add(id, h, at, int32(len(live)))
					want[id] = e
					live = append(live, e)
				} else {
					k := rng.IntN(len(live))
					e := live[k]
					live = append(live[:k], live[k+1:]...)
					evicted := ""
					if ids.tombstones() == tc.tombs {
						old, _ := ids.tombs.peek()
						evicted = ids.entries[old].id
					}
					ids.retire(e, Completed)
					if evicted != "" {
						delete(want, evicted)
					}
				}
				if ids.used != len(want) {
					t.Fatalf("step %d: %d slots used, %d identities retained", step, ids.used, len(want))
				}
				for id, e := range want {
					got, ok := ids.lookup(id)
					if !ok || got != &ids.entries[e] {
						t.Fatalf("step %d: %q not found at its entry %d", step, id, e)
					}
				}
				for _, gone := range []string{fmt.Sprint("id-", rng.IntN(next+1)), "never"} {
					if _, ok := want[gone]; !ok {
						if _, ok := ids.lookup(gone); ok {
							t.Fatalf("step %d: %q found after its eviction", step, gone)
						}
					}
				}
			}
			if next < 100 {
				t.Fatalf("only %d identities added", next)
			}
		})
	}
}
