package admit

import (
	"math/bits"
	"math/rand/v2"
)

// identities holds every identity a Controller retains, live or terminal,
// each in an entry whose index stays the same from Offer until the identity
// is forgotten, so one index from identity to entry serves the duplicate
// check and every lookup by identity, and the move from live to terminal
// touches no index at all.
//
// Terminal entries are the tombstones: a FIFO ring of at most max entry
// indices, oldest first. When it is full, retiring one more identity evicts
// the oldest tombstone and its entry is reused. Tombstones are never looked
// up by recency and never added twice (Offer refuses an identity still
// retained), so first-in-first-out eviction is exactly the
// least-recently-used eviction of the golang-lru simplelru this replaced.
// The entries and the ring grow on demand, the ring never past max, so a
// controller that retires little work does not pay for DefaultTombstones up
// front.
//
// The index is an open-addressing table of its own rather than a Go map,
// because a cycle (offer, take, release) used a map four times, hashing the
// identity each time, and that was half of the cycle's cost: here Offer
// hashes once for both the duplicate check and the insert (find returns
// where the identity would go), Release hashes only when the work released
// is not the work admitted last (Controller.taken), and evicting a
// tombstone hashes nothing (each tombstone keeps its hash).
type identities struct {
	seed    uint64 // random per table, so that no list of identities collides everywhere
	slots   []slot // a power of two long, never more than half used
	used    int
	entries []identity
	free    []int32    // unused entries
	tombs   ring[tomb] // terminal entries, oldest first
	max     int        // most tombstones retained
}

// slot is one place in the index: the low 32 bits of an identity's hash,
// which also choose its home slot, and its entry plus one (0: empty).
type slot struct {
	hash uint32
	e    int32
}

// tomb is a terminal entry in the ring, with its hash: eviction finds the
// slot to empty from the ring, which it reads in order, without first
// loading the entry, which it would not otherwise need and which is cold by
// then (retired Tombstones cycles ago).
type tomb struct {
	e    int32
	hash uint32
}

type identity struct {
	id   string
	hash uint32
	rec  int32       // the identity's record in the slab while live; -1 once terminal
	d    Disposition // the terminal disposition, once terminal
}

func newIdentities(live, tombstones int) identities {
	n := 16
	for n < 2*live {
		n *= 2
	}
	return identities{
		seed:    rand.Uint64(),
		slots:   make([]slot, n),
		entries: make([]identity, 0, live),
		max:     tombstones,
	}
}

func (t *identities) hash(id string) uint32 { return uint32(hashString(t.seed, id)) }

// hashString is the runtime's portable string hash (wyhash's mixing, as in
// runtime/hash64.go), seeded. It replaces hash/maphash.String, whose calls
// down to the AES hash cost 8-10 ns for a short identity, as much as a third
// of Offer; this one is about 4 ns. Identities are short (well under 16
// bytes), the case that takes no loop.
func hashString(seed uint64, s string) uint64 {
	const (
		m1 = 0xa0761d6478bd642f
		m2 = 0xe7037ed1a0b428db
		m5 = 0x1d8e4e27c47d124f
	)
	n := len(s)
	seed ^= m1
	var a, b uint64
	switch {
	case n == 0:
		return seed
	case n < 4:
		a = uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16
	case n < 8:
		a, b = le32(s, 0), le32(s, n-4)
	case n <= 16:
		a, b = le64(s, 0), le64(s, n-8)
	default:
		i := 0
		for ; n-i > 16; i += 16 {
			seed = mix(le64(s, i)^m2, le64(s, i+8)^seed)
		}
		a, b = le64(s, n-16), le64(s, n-8) // the last 16 bytes, overlapping
	}
	return mix(m5^uint64(n), mix(a^m2, b^seed))
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// le64 and le32 read s[i:] little-endian; the compiler combines the byte
// loads into one.
func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func le32(s string, i int) uint64 {
	_ = s[i+3]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24
}

// find returns id's hash and the slot that holds id, or, when ok is false,
// the empty slot where add would put it.
func (t *identities) find(id string) (h uint32, i int, ok bool) {
	h = t.hash(id)
	mask := len(t.slots) - 1
	for i = int(h) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.e == 0 {
			return h, i, false
		}
		if s.hash == h && t.entries[s.e-1].id == id {
			return h, i, true
		}
	}
}

// lookup returns id's entry; the pointer is valid until the next add.
func (t *identities) lookup(id string) (*identity, bool) {
	_, i, ok := t.find(id)
	if !ok {
		return nil, false
	}
	return &t.entries[t.slots[i].e-1], true
}

// add retains id, live in record rec, and returns its entry. h and at are
// what find returned for id, with nothing added or evicted since.
func (t *identities) add(id string, h uint32, at int, rec int32) int32 {
	var e int32
	if n := len(t.free); n > 0 {
		e = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.entries = append(t.entries, identity{})
		e = int32(len(t.entries) - 1)
	}
	t.entries[e] = identity{id: id, hash: h, rec: rec}
	if 2*(t.used+1) > len(t.slots) {
		t.grow()
		at = t.home(h)
	}
	t.slots[at] = slot{hash: h, e: e + 1}
	t.used++
	return e
}

// home returns the first empty slot on h's probe sequence.
func (t *identities) home(h uint32) int {
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.slots[i].e != 0 {
		i = (i + 1) & mask
	}
	return i
}

func (t *identities) grow() {
	old := t.slots
	t.slots = make([]slot, 2*len(old))
	for _, s := range old {
		if s.e != 0 {
			t.slots[t.home(s.hash)] = s
		}
	}
}

// remove takes entry e, whose hash is h, out of the index. Later slots of the same run move
// back into the hole (backward-shift deletion), so that find can stop at
// the first empty slot and no deleted markers accumulate.
func (t *identities) remove(e int32, h uint32) {
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.slots[i].e != e+1 {
		i = (i + 1) & mask
	}
	for j := i; ; {
		t.slots[i] = slot{}
		for {
			j = (j + 1) & mask
			s := t.slots[j]
			if s.e == 0 {
				t.used--
				return
			}
			// s stays unless its home lies cyclically outside (i, j]:
			// then find, probing from its home, passes i to reach it.
			k := int(s.hash) & mask
			if i <= j {
				if i < k && k <= j {
					continue
				}
			} else if i < k || k <= j {
				continue
			}
			t.slots[i] = s
			i = j
			break
		}
	}
}

// retire makes entry e a tombstone holding d, evicting the oldest tombstone
// when max are already retained.
func (t *identities) retire(e int32, d Disposition) {
	t.entries[e].rec, t.entries[e].d = -1, d
	if t.tombs.len() == t.max {
		old, _ := t.tombs.peek()
		t.tombs.pop()
		t.remove(old.e, old.hash)
		t.entries[old.e] = identity{}
		t.free = append(t.free, old.e)
	} else if t.tombs.len() == len(t.tombs.buf) {
		t.tombs.grow(min(max(2*len(t.tombs.buf), 64), t.max))
	}
	t.tombs.push(tomb{e, t.entries[e].hash})
}

// tombstones returns the number of terminal identities retained.
func (t *identities) tombstones() int { return t.tombs.len() }
