package admit_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// TestConcurrentAdmission hammers one dispatcher from many goroutines, each a
// call that submits turns, barges in and releases after a simulated cleanup.
// Run with -race: the check and the reservation must be one atomic step, so
// the number of leases observed by the workers never exceeds the slots.
func TestConcurrentAdmission(t *testing.T) {
	const slots, callers, turns = 3, 32, 40
	c, err := admit.New(admit.Limits{Slots: slots, Waiting: 8, MaxAge: 50 * time.Millisecond, Tombstones: 256})
	if err != nil {
		t.Fatal(err)
	}
	d := admit.NewDispatcher(c, nil)
	defer d.Stop()
	var running, most atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("call-", i)
			gen := uint64(1)
			d.Rotate(owner, gen)
			defer d.Forget(owner)
			for n := range turns {
				tk, disp, err := d.Submit(admit.Job{ID: fmt.Sprintf("%s/%d", owner, n), Owner: owner, Generation: gen, Born: time.Now()})
				if err != nil {
					t.Error(err)
					return
				}
				if disp != admit.Queued {
					continue
				}
				if n%7 == 3 { // barge in while queued or running
					gen++
					d.Rotate(owner, gen)
				}
				<-tk.Done()
				if r, _ := tk.Result(); r != admit.Admitted {
					continue
				}
				if now := running.Add(1); now > most.Load() {
					most.Store(now)
				}
				time.Sleep(time.Duration(n%3) * 100 * time.Microsecond)
				running.Add(-1)
				if _, err := d.Release(tk.Job.ID); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 200 { // readers race with the writers
		s := c.Snapshot(t0)
		if s.Leased > slots || s.Queued > 8 {
			t.Fatalf("limits broken: %+v", s)
		}
		if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	wg.Wait()
	if most.Load() > slots {
		t.Fatalf("%d leases held at once, slots %d", most.Load(), slots)
	}
	s := c.Snapshot(t0)
	if s.Leased != 0 || s.Queued != 0 || s.Owners != 0 {
		t.Fatalf("inventory after every call ended: %+v", s)
	}
	if err := s.Ledger.Check(0, 0); err != nil {
		t.Fatal(err)
	}
	if s.Ledger.Admitted == 0 {
		t.Fatal("no work admitted")
	}
}
