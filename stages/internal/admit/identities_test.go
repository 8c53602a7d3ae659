package admit

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
						evicted = ids.entries[old.e].id
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

// TestHashString checks that the identity hash reads every length without
// going out of bounds, depends on every byte and on the seed, and spreads
// sequential identities over the low bits that choose a home slot.
func TestHashString(t *testing.T) {
	const seed = 0x5eed
	b := make([]byte, 64)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	seen := map[uint64]string{}
	for n := 0; n <= len(b); n++ {
		s := string(b[:n])
		h := hashString(seed, s)
		if prev, ok := seen[h]; ok {
			t.Fatalf("%q and %q hash alike", prev, s)
		}
		seen[h] = s
		if hashString(seed+1, s) == h && n > 0 {
			t.Fatalf("%q: the seed changes nothing", s)
		}
		for i := range n {
			c := []byte(s)
			c[i] ^= 1
			if hashString(seed, string(c)) == h {
				t.Fatalf("%q: byte %d changes nothing", s, i)
			}
		}
	}
	const ids, buckets = 1 << 16, 1 << 10
	var count [buckets]int
	for i := range ids {
		count[hashString(seed, fmt.Sprint("turn-", i))&(buckets-1)]++
	}
	for i, c := range count { // 64 expected per bucket
		if c < 24 || c > 112 {
			t.Fatalf("bucket %d holds %d of %d sequential identities", i, c, ids)
		}
	}
}
