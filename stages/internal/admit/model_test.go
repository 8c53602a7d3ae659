package admit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the reference semantics written as plainly as possible: slices
// and maps, no ring, no per-owner index. Terminal identities are kept in the
// order they became terminal, and the oldest is forgotten when there are more
// than the limit: an identity forgotten may be offered again.
type model struct {
	slots, waiting int
	maxAge         time.Duration
	tombstones     int
	closed         bool
	queue          []string
	leases         map[string]bool
	jobs           map[string]Job
	state          map[string]Disposition
	gen            map[string]uint64
	lastBorn       map[string]time.Time
	terminal       []string // oldest first
	// Fair order: when each tenant with waiting work was last served.
	fair       bool
	seq        uint64
	lastServed map[string]uint64
}

func newModel(l Limits) *model {
	tombstones := l.Tombstones
	if tombstones == 0 {
		tombstones = DefaultTombstones
	}
	return &model{slots: l.Slots, waiting: l.Waiting, maxAge: l.MaxAge, tombstones: tombstones, leases: map[string]bool{},
		jobs: map[string]Job{}, state: map[string]Disposition{}, gen: map[string]uint64{}, lastBorn: map[string]time.Time{},
		fair: l.Order == Fair, lastServed: map[string]uint64{}}
}

// retire records that id reached its terminal state d.
func (m *model) retire(id string, d Disposition) {
	m.state[id] = d
	m.terminal = append(m.terminal, id)
	if len(m.terminal) > m.tombstones {
		delete(m.jobs, m.terminal[0])
		delete(m.state, m.terminal[0])
		m.terminal = m.terminal[1:]
	}
}

func (m *model) rotate(owner string, g uint64) bool {
	if cur, ok := m.gen[owner]; owner == "" || (ok && g <= cur) {
		return false
	}
	_, known := m.gen[owner]
	m.gen[owner] = g
	delete(m.lastBorn, owner)
	if known {
		m.cancelOwner(owner)
	}
	return true
}

func (m *model) cancelOwner(owner string) {
	for id := range m.leases {
		if m.jobs[id].Owner == owner {
			m.state[id] = Cancelled // the lease stays until release
		}
	}
	for _, id := range m.queue { // in arrival order: the order they retire
		if m.jobs[id].Owner == owner {
			m.retire(id, Cancelled)
		}
	}
	m.queue = slices.DeleteFunc(m.queue, func(id string) bool { return m.state[id] != Queued })
	m.prune()
}

// prune forgets the turns of tenants with nothing waiting.
func (m *model) prune() {
	for tn := range m.lastServed {
		if !slices.ContainsFunc(m.queue, func(id string) bool { return m.jobs[id].Tenant == tn }) {
			delete(m.lastServed, tn)
		}
	}
}

// next is the index in the queue of the work a free slot goes to: the head,
// or under Fair order with more than one tenant waiting, the oldest work of
// the tenant served least recently (ties to the earliest), or its owner's
// earlier work.
func (m *model) next() int {
	if !m.fair {
		return 0
	}
	best := 0
	for i, id := range m.queue {
		if m.lastServed[m.jobs[id].Tenant] < m.lastServed[m.jobs[m.queue[best]].Tenant] {
			best = i
		}
	}
	owner := m.jobs[m.queue[best]].Owner
	return slices.IndexFunc(m.queue, func(id string) bool { return m.jobs[id].Owner == owner })
}

func (m *model) cancel(id string) (Disposition, bool) {
	switch d, ok := m.state[id]; {
	case !ok:
		return 0, false
	case d == Queued:
		m.retire(id, Cancelled)
		m.queue = slices.DeleteFunc(m.queue, func(q string) bool { return q == id })
		m.prune()
	case d == Active:
		m.state[id] = Cancelled
	}
	return m.state[id], true
}

func (m *model) forget(owner string) {
	if _, ok := m.gen[owner]; ok {
		m.cancelOwner(owner)
	}
	delete(m.gen, owner)
	delete(m.lastBorn, owner)
}

func (m *model) offer(j Job, now time.Time) (Disposition, bool) {
	if j.ID == "" || j.Owner == "" || j.Born.IsZero() || j.Born.After(now) {
		return 0, false
	}
	if _, ok := m.jobs[j.ID]; ok {
		return 0, false
	}
	g, ok := m.gen[j.Owner]
	switch lb, has := m.lastBorn[j.Owner]; {
	case !ok || g != j.Generation:
		return Stale, true
	case has && j.Born.Before(lb):
		return OutOfOrder, true
	case now.Sub(j.Born) > m.maxAge:
		return Expired, true
	case m.closed:
		return Closed, true
	case len(m.queue) >= m.waiting:
		return Overloaded, true
	}
	m.lastBorn[j.Owner] = j.Born
	m.jobs[j.ID], m.state[j.ID] = j, Queued
	m.queue = append(m.queue, j.ID)
	return Queued, true
}

func (m *model) take(now time.Time) (Disposition, string, bool) {
	if len(m.queue) == 0 {
		if m.closed {
			return Closed, "", true
		}
		return Empty, "", true
	}
	id := m.queue[0]
	j := m.jobs[id]
	if now.Before(j.Born) {
		return 0, "", false
	}
	if now.Sub(j.Born) > m.maxAge {
		m.queue = m.queue[1:]
		m.retire(id, Expired)
		m.prune()
		return Expired, id, true
	}
	if len(m.leases) >= m.slots {
		return Busy, "", true
	}
	i := m.next()
	id = m.queue[i]
	m.queue = slices.Delete(m.queue, i, i+1)
	if now.Sub(m.jobs[id].Born) > m.maxAge {
		m.retire(id, Expired)
		m.prune()
		return Expired, id, true
	}
	m.seq++
	m.lastServed[m.jobs[id].Tenant] = m.seq
	m.prune()
	m.leases[id] = true
	m.state[id] = Active
	return Admitted, id, true
}

func (m *model) release(id string) (Disposition, bool) {
	if !m.leases[id] {
		return 0, false
	}
	delete(m.leases, id)
	d := Completed
	if m.state[id] == Cancelled {
		d = Cancelled
	}
	m.retire(id, d)
	return d, true
}

// TestProperties runs random sequences of every operation against the model,
// checking each outcome, the limits and the ledger at every step.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := Limits{
			Slots:   rapid.IntRange(1, 3).Draw(t, "slots"),
			Waiting: rapid.IntRange(1, 4).Draw(t, "waiting"),
			MaxAge:  time.Duration(rapid.IntRange(0, 5).Draw(t, "maxAge")) * time.Second,
			// Small bounds may evict tombstones within a run; 0 is the default.
			Tombstones: rapid.SampledFrom([]int{0, 1, 2, 3, 5, 8}).Draw(t, "tombstones"),
			Order:      rapid.SampledFrom([]Order{FIFO, Fair}).Draw(t, "order"),
		}
		c, err := New(l)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(l)
		now := t0
		owners := []string{"a", "b", "c"}
		nextID := 0
		known := []string{}
		t.Repeat(map[string]func(*rapid.T){
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond)
			},
			"rotate": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				g := uint64(rapid.IntRange(0, 4).Draw(t, "gen"))
				want := m.rotate(o, g)
				if err := c.Rotate(o, g, now); (err == nil) != want {
					t.Fatalf("Rotate(%s, %d) = %v, model ok %v", o, g, err, want)
				}
			},
			"forget": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				m.forget(o)
				c.Forget(o, now)
			},
			"offer": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				id := fmt.Sprint("j", nextID)
				if len(known) > 0 && rapid.IntRange(0, 9).Draw(t, "reuse") == 0 {
					id = rapid.SampledFrom(known).Draw(t, "id")
				} else {
					nextID++
					known = append(known, id)
				}
				g := m.gen[o]
				if rapid.IntRange(0, 4).Draw(t, "wrongGen") == 0 {
					g++
				}
				born := now.Add(-time.Duration(rapid.IntRange(-500, 7000).Draw(t, "agems")) * time.Millisecond)
				j := Job{ID: id, Owner: o, Generation: g, Born: born, Tenant: tenantOf(t, o)}
				want, ok := m.offer(j, now)
				got, err := c.Offer(j, now)
				if (err == nil) != ok || got != want {
					t.Fatalf("Offer(%+v) = %v, %v; model %v, %v", j, got, err, want, ok)
				}
			},
			"take": func(t *rapid.T) {
				want, wid, ok := m.take(now)
				got, id, err := c.Take(now)
				if (err == nil) != ok || got != want || id != wid {
					t.Fatalf("Take = %v %q %v; model %v %q %v", got, id, err, want, wid, ok)
				}
				if got == Admitted && c.Snapshot(now).Leased > m.slots {
					t.Fatalf("admitted over the current limit %d", m.slots)
				}
			},
			"set slots": func(t *rapid.T) {
				n := rapid.IntRange(1, 4).Draw(t, "n")
				old := rapid.SampledFrom([]int{0, m.slots, m.slots + 1}).Draw(t, "old")
				want := m.slots
				if old == 0 || old == m.slots {
					want, m.slots = n, n
				}
				if got, err := c.SetSlots(old, n); err != nil || got != want {
					t.Fatalf("SetSlots(%d, %d) = %d, %v; want %d", old, n, got, err, want)
				}
			},
			"release": func(t *rapid.T) {
				if len(known) == 0 {
					return // nothing offered yet: releasing is a no-op step
				}
				id := rapid.SampledFrom(known).Draw(t, "id")
				want, ok := m.release(id)
				got, err := c.Release(id)
				if (err == nil) != ok || got != want {
					t.Fatalf("Release(%s) = %v, %v; model %v, %v", id, got, err, want, ok)
				}
			},
			"cancel": func(t *rapid.T) {
				if len(known) == 0 {
					return
				}
				id := rapid.SampledFrom(known).Draw(t, "id")
				want, ok := m.cancel(id)
				got, err := c.Cancel(id, now)
				if (err == nil) != ok || got != want {
					t.Fatalf("Cancel(%s) = %v, %v; model %v, %v", id, got, err, want, ok)
				}
			},
			"close": func(t *rapid.T) {
				m.closed = true
				c.Close()
			},
			"reopen": func(t *rapid.T) {
				m.closed = false
				c.Reopen()
			},
			"": func(t *rapid.T) { verify(t, c, m, l, known, now) },
		})
	})
}

// verify checks the controller against the model at now: the limits, the
// inventory and tombstone count, the ledger, pending cleanup, and the state
// of every identity in known.
func verify(t *rapid.T, c *Controller, m *model, l Limits, known []string, now time.Time) {
	s := c.Snapshot(now)
	if s.Limits.Slots != m.slots || s.Queued > l.Waiting || s.Tombstones > m.tombstones {
		t.Fatalf("limits broken: %+v", s)
	}
	if s.Leased != len(m.leases) || s.Queued != len(m.queue) || s.Tombstones != len(m.terminal) {
		t.Fatalf("inventory %d leased %d queued %d tombstones; model %d %d %d",
			s.Leased, s.Queued, s.Tombstones, len(m.leases), len(m.queue), len(m.terminal))
	}
	if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
		t.Fatal(err)
	}
	pending := 0
	for id := range m.leases {
		if m.state[id] == Cancelled {
			pending++
		}
	}
	if s.CleanupPending != pending {
		t.Fatalf("cleanup pending %d, model %d", s.CleanupPending, pending)
	}
	for _, id := range known {
		got, gok := c.State(id)
		want, wok := m.state[id]
		if gok != wok || got != want {
			t.Fatalf("State(%s) = %v %v; model %v %v", id, got, gok, want, wok)
		}
	}
}

// TestTombstoneProperties drives a controller with few tombstones and a small
// pool of identities against the model, with operations that each retire
// several identities, so that most runs evict tombstones and offer evicted
// identities again: eviction must be oldest first, and an evicted identity
// unknown to State, Cancel, Release and the duplicate check.
func TestTombstoneProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := Limits{
			Slots:      rapid.IntRange(1, 2).Draw(t, "slots"),
			Waiting:    rapid.IntRange(1, 3).Draw(t, "waiting"),
			MaxAge:     2 * time.Second,
			Tombstones: rapid.IntRange(1, 4).Draw(t, "tombstones"),
		}
		c, err := New(l)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(l)
		now := t0
		owners := []string{"a", "b"}
		for _, o := range owners {
			m.rotate(o, 1)
			c.Rotate(o, 1, now)
		}
		pool := []string{"j0", "j1", "j2", "j3", "j4", "j5"}
		t.Repeat(map[string]func(*rapid.T){
			"offer": func(t *rapid.T) {
				for range rapid.IntRange(1, 3).Draw(t, "n") {
					o := rapid.SampledFrom(owners).Draw(t, "owner")
					j := Job{ID: rapid.SampledFrom(pool).Draw(t, "id"), Owner: o, Generation: m.gen[o], Born: now}
					want, ok := m.offer(j, now)
					if got, err := c.Offer(j, now); (err == nil) != ok || got != want {
						t.Fatalf("Offer(%+v) = %v, %v; model %v, %v", j, got, err, want, ok)
					}
				}
			},
			"take and release": func(t *rapid.T) {
				for range rapid.IntRange(1, 3).Draw(t, "n") {
					want, wid, _ := m.take(now)
					got, id, err := c.Take(now)
					if err != nil || got != want || id != wid {
						t.Fatalf("Take = %v %q %v; model %v %q", got, id, err, want, wid)
					}
				}
				for _, id := range pool {
					if m.leases[id] && rapid.Bool().Draw(t, "release") {
						want, _ := m.release(id)
						if got, err := c.Release(id); err != nil || got != want {
							t.Fatalf("Release(%s) = %v, %v; model %v", id, got, err, want)
						}
					}
				}
			},
			"release or cancel any": func(t *rapid.T) {
				id := rapid.SampledFrom(pool).Draw(t, "id")
				if rapid.Bool().Draw(t, "cancel") {
					want, ok := m.cancel(id)
					if got, err := c.Cancel(id, now); (err == nil) != ok || got != want {
						t.Fatalf("Cancel(%s) = %v, %v; model %v, %v", id, got, err, want, ok)
					}
					return
				}
				want, ok := m.release(id)
				if got, err := c.Release(id); (err == nil) != ok || got != want {
					t.Fatalf("Release(%s) = %v, %v; model %v, %v", id, got, err, want, ok)
				}
			},
			"rotate": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				m.rotate(o, m.gen[o]+1)
				if err := c.Rotate(o, m.gen[o], now); err != nil {
					t.Fatal(err)
				}
			},
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond)
			},
			"": func(t *rapid.T) { verify(t, c, m, l, pool, now) },
		})
	})
}

// tenantOf is owner o's tenant, as a call's tenant is its own, but now and
// then another, so that an owner's work may span tenants.
func tenantOf(t *rapid.T, o string) string {
	if rapid.IntRange(0, 9).Draw(t, "otherTenant") == 0 {
		return rapid.SampledFrom([]string{"", "x", "y"}).Draw(t, "tenant")
	}
	return map[string]string{"a": "x", "b": "y"}[o]
}
