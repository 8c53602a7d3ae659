package stages

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the reference semantics written as plainly as possible: slices
// and maps, no ring, no tombstone eviction, no per-owner index.
type model struct {
	slots, waiting int
	maxAge         time.Duration
	closed         bool
	queue          []string
	leases         map[string]bool
	jobs           map[string]Job
	state          map[string]Disposition
	gen            map[string]uint64
	lastBorn       map[string]time.Time
}

func newModel(l Limits) *model {
	return &model{slots: l.Slots, waiting: l.Waiting, maxAge: l.MaxAge, leases: map[string]bool{},
		jobs: map[string]Job{}, state: map[string]Disposition{}, gen: map[string]uint64{}, lastBorn: map[string]time.Time{}}
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
	for id, j := range m.jobs {
		if j.Owner == owner && (m.state[id] == Queued || m.state[id] == Active) {
			m.state[id] = Cancelled
		}
	}
	m.queue = slices.DeleteFunc(m.queue, func(id string) bool { return m.state[id] != Queued })
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
		m.state[id] = Expired
		return Expired, id, true
	}
	if len(m.leases) >= m.slots {
		return Busy, "", true
	}
	m.queue = m.queue[1:]
	m.leases[id] = true
	m.state[id] = Active
	return Admitted, id, true
}

func (m *model) release(id string) (Disposition, bool) {
	if !m.leases[id] {
		return 0, false
	}
	delete(m.leases, id)
	if m.state[id] == Active {
		m.state[id] = Completed
	}
	return m.state[id], true
}

// TestProperties runs random sequences of every operation against the model,
// checking each outcome, the limits and the ledger at every step.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := Limits{
			Slots:   rapid.IntRange(1, 3).Draw(t, "slots"),
			Waiting: rapid.IntRange(1, 4).Draw(t, "waiting"),
			MaxAge:  time.Duration(rapid.IntRange(0, 5).Draw(t, "maxAge")) * time.Second,
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
				if err := c.RotateAt(o, g, now); (err == nil) != want {
					t.Fatalf("Rotate(%s, %d) = %v, model ok %v", o, g, err, want)
				}
			},
			"forget": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				m.forget(o)
				c.ForgetAt(o, now)
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
				j := Job{ID: id, Owner: o, Generation: g, Born: born}
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
			"close": func(t *rapid.T) {
				m.closed = true
				c.Close()
			},
			"reopen": func(t *rapid.T) {
				m.closed = false
				c.Reopen()
			},
			"": func(t *rapid.T) {
				s := c.SnapshotAt(now)
				if s.Leased > l.Slots || s.Queued > l.Waiting {
					t.Fatalf("limits broken: %+v", s)
				}
				if s.Leased != len(m.leases) || s.Queued != len(m.queue) {
					t.Fatalf("inventory %d leased %d queued; model %d %d", s.Leased, s.Queued, len(m.leases), len(m.queue))
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
			},
		})
	})
}
