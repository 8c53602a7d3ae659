package admit

import (
	"fmt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestFairProperties drives a Fair controller where tenants contend (one
// slot or two, work that does not expire quickly, owners each of their own
// tenant) against the model's plain round robin, with limit changes.
func TestFairProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := Limits{
			Slots:   rapid.IntRange(1, 2).Draw(t, "slots"),
			Waiting: rapid.IntRange(2, 6).Draw(t, "waiting"),
			MaxAge:  10 * time.Second,
			Order:   Fair,
		}
		c, err := New(l)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(l)
		now := t0
		owners := []string{"a", "b", "c"}
		for _, o := range owners {
			m.rotate(o, 1)
			if err := c.Rotate(o, 1, now); err != nil {
				t.Fatal(err)
			}
		}
		var known []string
		t.Repeat(map[string]func(*rapid.T){
			"offer": func(t *rapid.T) {
				o := rapid.SampledFrom(owners).Draw(t, "owner")
				id := fmt.Sprint("j", len(known))
				known = append(known, id)
				j := Job{ID: id, Owner: o, Generation: 1, Born: now, Tenant: tenantOf(t, o)}
				want, _ := m.offer(j, now)
				if got, err := c.Offer(j, now); err != nil || got != want {
					t.Fatalf("Offer(%+v) = %v, %v; model %v", j, got, err, want)
				}
			},
			"take": func(t *rapid.T) {
				want, wid, _ := m.take(now)
				got, id, err := c.Take(now)
				if err != nil || got != want || id != wid {
					t.Fatalf("Take = %v %q %v; model %v %q", got, id, err, want, wid)
				}
			},
			"release": func(t *rapid.T) {
				for id := range m.leases {
					want, _ := m.release(id)
					if got, err := c.Release(id); err != nil || got != want {
						t.Fatalf("Release(%s) = %v, %v; model %v", id, got, err, want)
					}
					return
				}
			},
			"cancel": func(t *rapid.T) {
				if len(known) == 0 {
					return
				}
				id := rapid.SampledFrom(known).Draw(t, "id")
				want, ok := m.cancel(id)
				if got, err := c.Cancel(id, now); (err == nil) != ok || got != want {
					t.Fatalf("Cancel(%s) = %v, %v; model %v", id, got, err, want)
				}
			},
			"set slots": func(t *rapid.T) {
				n := rapid.IntRange(1, 3).Draw(t, "n")
				m.slots = n
				if _, err := c.SetSlots(0, n); err != nil {
					t.Fatal(err)
				}
			},
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(t, "ms")) * time.Millisecond)
			},
			"": func(t *rapid.T) { verify(t, c, m, l, known, now) },
		})
	})
}

// TestFairRoundRobin: a tenant with a backlog and two quiet ones; each freed
// slot goes to the tenants in turn, oldest first within a tenant, and the
// passed-over work that then expires is counted.
func TestFairRoundRobin(t *testing.T) {
	c, err := New(Limits{Slots: 1, Waiting: 16, MaxAge: 5 * time.Second, Order: Fair})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"burst", "q1", "q2"} {
		if err := c.Rotate(o, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	offer := func(id, owner, tenant string, at time.Time) {
		t.Helper()
		if d, err := c.Offer(Job{ID: id, Owner: owner, Generation: 1, Born: at, Tenant: tenant}, at); err != nil || d != Queued {
			t.Fatalf("Offer(%s) = %v, %v", id, d, err)
		}
	}
	for i := range 6 {
		offer(fmt.Sprint("b", i), "burst", "B", t0)
	}
	offer("q1", "q1", "Q1", t0.Add(time.Second))
	offer("q2", "q2", "Q2", t0.Add(time.Second))
	var got []string
	now := t0.Add(time.Second)
	for range 5 {
		d, id, err := c.Take(now)
		if err != nil || d != Admitted {
			t.Fatalf("Take = %v %q %v", d, id, err)
		}
		got = append(got, id)
		if _, err := c.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if want := "[b0 q1 q2 b1 b2]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	led := c.Snapshot(now).Ledger
	if led.FairSkips != 2 {
		t.Fatalf("fair skips %d, want 2", led.FairSkips)
	}
	// Under FIFO the same offers are served b0..b4: Fair is the difference.
	now = t0.Add(6 * time.Second) // b3..b5 are past MaxAge: they expire, overtaken
	for {
		d, _, err := c.Take(now)
		if err != nil {
			t.Fatal(err)
		}
		if d != Expired {
			break
		}
	}
	if led := c.Snapshot(now).Ledger; led.Expired != 3 || led.ExpiredOvertaken != 3 {
		t.Fatalf("expired %d, overtaken %d; want 3 and 3", led.Expired, led.ExpiredOvertaken)
	}
}

// TestLoweredLimitDrains: lowering the limit revokes nothing; no lease is
// granted until releases bring the leases under the new limit.
func TestLoweredLimitDrains(t *testing.T) {
	c, err := New(Limits{Slots: 3, Waiting: 8, MaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher(c, stoppedClock{t0})
	defer d.Stop()
	if err := d.Rotate("o", 1); err != nil {
		t.Fatal(err)
	}
	var tickets []*Ticket
	for i := range 6 {
		tk, disp, err := d.Submit(Job{ID: fmt.Sprint("j", i), Owner: "o", Generation: 1, Born: t0})
		if err != nil || disp != Queued {
			t.Fatal(disp, err)
		}
		tickets = append(tickets, tk)
	}
	if n, err := d.SetSlots(3, 1); err != nil || n != 1 {
		t.Fatalf("SetSlots = %d, %v", n, err)
	}
	if sn := c.Snapshot(t0); sn.Leased != 3 || sn.Limits.Slots != 1 {
		t.Fatalf("after lowering: %+v", sn)
	}
	for i := range 2 { // two releases drain to the limit: nothing admitted
		if _, err := d.Release(fmt.Sprint("j", i)); err != nil {
			t.Fatal(err)
		}
		if sn := c.Snapshot(t0); sn.Leased != 2-i || sn.Queued != 3 {
			t.Fatalf("release %d: leased %d queued %d", i, sn.Leased, sn.Queued)
		}
	}
	if _, err := d.Release("j2"); err != nil { // under the limit: j3 admitted
		t.Fatal(err)
	}
	if r, _ := tickets[3].Result(); r != Admitted || c.Snapshot(t0).Leased != 1 {
		t.Fatalf("j3 %v, leased %d", r, c.Snapshot(t0).Leased)
	}
	if n, err := d.SetSlots(0, 3); err != nil || n != 3 { // raised: j4 and j5 at once
		t.Fatalf("SetSlots = %d, %v", n, err)
	}
	if sn := c.Snapshot(t0); sn.Leased != 3 || sn.Queued != 0 {
		t.Fatalf("after raising: leased %d queued %d", sn.Leased, sn.Queued)
	}
	if n, _ := d.SetSlots(7, 5); n != 3 {
		t.Fatalf("SetSlots with a stale old = %d, want the limit unchanged (3)", n)
	}
}

// stoppedClock is a clock that never moves: its timers never fire.
type stoppedClock struct{ t time.Time }

func (c stoppedClock) Now() time.Time                            { return c.t }
func (stoppedClock) AfterFunc(time.Duration, func()) clock.Timer { return time.NewTimer(time.Hour) }
