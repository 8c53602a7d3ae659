package stages

// identities holds every identity a Controller retains, live or terminal,
// each in an entry whose index stays the same from Offer until the identity
// is forgotten, so one map from identity to entry serves the duplicate check
// and every lookup by identity, where a live map and a separate tombstone map
// each hashed it, and the move from live to terminal touches no map at all.
//
// Terminal entries are the tombstones: a FIFO ring of at most max entry
// indices, oldest first. When it is full, retiring one more identity evicts
// the oldest tombstone: one map delete, and its entry is reused. Tombstones
// are never looked up by recency and never added twice (Offer refuses an
// identity still retained), so first-in-first-out eviction is exactly the
// least-recently-used eviction of the golang-lru simplelru this replaces,
// without its allocation of a list element per terminal record or its second
// map. The entries and the ring grow on demand, the ring never past max, so a
// controller that retires little work does not pay for DefaultTombstones up
// front.
type identities struct {
	index   map[string]int32 // identity -> its entry
	entries []identity
	free    []int32 // unused entries
	tombs   ring    // terminal entries, oldest first
	max     int     // most tombstones retained
}

type identity struct {
	id  string
	rec int32       // the identity's record in the slab while live; -1 once terminal
	d   Disposition // the terminal disposition, once terminal
}

func newIdentities(live, tombstones int) identities {
	return identities{
		index:   make(map[string]int32, live),
		entries: make([]identity, 0, live),
		max:     tombstones,
	}
}

// lookup returns id's entry; the pointer is valid until the next add.
func (t *identities) lookup(id string) (*identity, bool) {
	e, ok := t.index[id]
	if !ok {
		return nil, false
	}
	return &t.entries[e], true
}

// add retains id, live in record rec, and returns its entry.
func (t *identities) add(id string, rec int32) int32 {
	var e int32
	if n := len(t.free); n > 0 {
		e = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.entries = append(t.entries, identity{})
		e = int32(len(t.entries) - 1)
	}
	t.entries[e] = identity{id: id, rec: rec}
	t.index[id] = e
	return e
}

// retire makes entry e a tombstone holding d, evicting the oldest tombstone
// when max are already retained.
func (t *identities) retire(e int32, d Disposition) {
	t.entries[e].rec, t.entries[e].d = -1, d
	if t.tombs.len() == t.max {
		old, _ := t.tombs.peek()
		t.tombs.pop()
		delete(t.index, t.entries[old].id)
		t.entries[old] = identity{}
		t.free = append(t.free, old)
	} else if t.tombs.len() == len(t.tombs.buf) {
		t.tombs.grow(min(max(2*len(t.tombs.buf), 64), t.max))
	}
	t.tombs.push(e)
}

// tombstones returns the number of terminal identities retained.
func (t *identities) tombstones() int { return t.tombs.len() }
