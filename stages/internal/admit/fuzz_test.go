package admit

import (
	"testing"
	"time"
)

// FuzzOperations interprets bytes as a sequence of operations on a small
// controller and checks the limits and the ledger after each one. No input
// may panic or unbalance the ledger.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 3, 2, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 1, 0, 1, 0, 2, 2, 2, 3, 3, 8, 9, 1, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := Limits{Slots: 2, Waiting: 3, MaxAge: 2 * time.Second, Tombstones: 8}
		c, err := New(l)
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		owners := []string{"x", "y"}
		gen := map[string]uint64{}
		for i, b := range ops {
			arg := int(b >> 4)
			switch b & 0x0f {
			case 0:
				o := owners[arg%2]
				gen[o] += uint64(arg%3) + 1
				c.Rotate(o, gen[o], now)
			case 1:
				o := owners[arg%2]
				born := now.Add(-time.Duration(arg) * 300 * time.Millisecond)
				c.Offer(Job{ID: ids[(i+arg)%len(ids)] + string(rune('0'+i%10)), Owner: o, Generation: gen[o], Born: born}, now)
			case 2, 3:
				c.Take(now)
			case 4, 5:
				for _, id := range ids {
					c.Release(id + string(rune('0'+arg%10)))
				}
			case 6:
				c.Cancel(ids[arg%len(ids)]+string(rune('0'+arg%10)), now)
			case 7:
				c.Forget(owners[arg%2], now)
			case 8:
				c.Close()
			case 9:
				c.Reopen()
			default:
				now = now.Add(time.Duration(arg) * 250 * time.Millisecond)
			}
			s := c.Snapshot(now)
			if s.Leased > l.Slots || s.Queued > l.Waiting || s.Tombstones > l.Tombstones {
				t.Fatalf("limits broken after op %d: %+v", i, s)
			}
			if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
				t.Fatalf("after op %d: %v", i, err)
			}
		}
	})
}
