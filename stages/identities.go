package stages

// tombstones is the bounded memory of terminal records: a FIFO ring of at
// most max entries, each an identity and its terminal disposition. When the
// ring is full, a new tombstone overwrites the oldest one in place.
//
// A tombstone is never looked up by recency, only by identity (through the
// Controller's identity map) and never added twice (an identity still
// retained is refused by Offer), so first-in-first-out eviction is exactly
// least-recently-used eviction here. The ring replaces golang-lru's simplelru,
// which allocated a list element per Add and kept a second map: the ring's
// entries are reused in place, so a terminal record costs no allocation once
// the ring has grown to its bound, and an eviction is one map delete.
//
// The ring grows on demand up to max rather than being allocated whole by
// New, so that a controller that retires little work does not pay for
// DefaultTombstones entries up front; its capacity never exceeds max.
type tombstones struct {
	buf  []tombstone
	max  int
	next int // once the ring is full, the oldest entry: the next overwritten
}

type tombstone struct {
	id string
	d  Disposition
}

func newTombstones(n int) tombstones { return tombstones{max: n} }

func (t *tombstones) len() int { return len(t.buf) }

// add retains id's terminal disposition d and returns its slot. When the
// ring was full, the oldest tombstone was overwritten: add reports its
// identity, which the caller must forget.
func (t *tombstones) add(id string, d Disposition) (slot int, evicted string, full bool) {
	if len(t.buf) < t.max {
		if len(t.buf) == cap(t.buf) {
			grown := make([]tombstone, len(t.buf), min(max(2*cap(t.buf), 64), t.max))
			copy(grown, t.buf)
			t.buf = grown
		}
		t.buf = append(t.buf, tombstone{id: id, d: d})
		return len(t.buf) - 1, "", false
	}
	slot = t.next
	evicted = t.buf[slot].id
	t.buf[slot] = tombstone{id: id, d: d}
	if t.next++; t.next == t.max {
		t.next = 0
	}
	return slot, evicted, true
}

// at returns the disposition held in slot.
func (t *tombstones) at(slot int) Disposition { return t.buf[slot].d }
