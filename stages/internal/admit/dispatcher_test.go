package admit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newDispatcher(t *testing.T, l admit.Limits) (*admit.Dispatcher, *stagestest.Clock) {
	t.Helper()
	c, err := admit.New(l)
	if err != nil {
		t.Fatal(err)
	}
	clock := stagestest.NewClock(t0)
	d := admit.NewDispatcher(c, clock)
	t.Cleanup(d.Stop)
	return d, clock
}

func submit(t *testing.T, d *admit.Dispatcher, id, owner string, gen uint64, born time.Time) *admit.Ticket {
	t.Helper()
	tk, disp, err := d.Submit(admit.Job{ID: id, Owner: owner, Generation: gen, Born: born})
	if err != nil || disp != admit.Queued {
		t.Fatalf("Submit(%s) = %v, %v", id, disp, err)
	}
	return tk
}

func resolved(t *testing.T, tk *admit.Ticket, want admit.Disposition, wantAt time.Time) {
	t.Helper()
	select {
	case <-tk.Done():
	default:
		t.Fatalf("%s unresolved, want %v", tk.Job.ID, want)
	}
	if got, at := tk.Result(); got != want || !at.Equal(wantAt) {
		t.Fatalf("%s = %v at %v, want %v at %v", tk.Job.ID, got, at, want, wantAt)
	}
}

func pending(t *testing.T, tk *admit.Ticket) {
	t.Helper()
	select {
	case <-tk.Done():
		r, _ := tk.Result()
		t.Fatalf("%s resolved as %v, want pending", tk.Job.ID, r)
	default:
	}
}

func TestDispatcherAdmitsOnRelease(t *testing.T) {
	d, clock := newDispatcher(t, admit.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second})
	d.Rotate("a", 1)
	d.Rotate("b", 1)
	a := submit(t, d, "a1", "a", 1, t0)
	resolved(t, a, admit.Admitted, t0)
	b := submit(t, d, "b1", "b", 1, t0)
	if pos, ok, err := b.Position(context.Background()); err != nil || !ok || pos != 1 {
		t.Fatalf("position %d %v", pos, ok)
	}
	clock.Advance(500 * time.Millisecond)
	pending(t, b)
	if _, err := d.Release("a1"); err != nil {
		t.Fatal(err)
	}
	resolved(t, b, admit.Admitted, t0.Add(500*time.Millisecond))
}

func TestDispatcherExpiresAtDeadlineWhileBusy(t *testing.T) {
	d, clock := newDispatcher(t, admit.Limits{Slots: 1, Waiting: 3, MaxAge: time.Second})
	d.Rotate("a", 1)
	d.Rotate("b", 1)
	submit(t, d, "a1", "a", 1, t0)
	b := submit(t, d, "b1", "b", 1, t0.Add(-200*time.Millisecond))
	c := submit(t, d, "b2", "b", 1, t0)
	clock.Advance(800 * time.Millisecond) // b1 exactly at MaxAge: still eligible
	pending(t, b)
	clock.Advance(time.Millisecond)
	resolved(t, b, admit.Expired, t0.Add(800*time.Millisecond+time.Nanosecond))
	pending(t, c)
	clock.Advance(time.Second)
	resolved(t, c, admit.Expired, t0.Add(time.Second+time.Nanosecond))
	if clock.Pending() != 0 {
		t.Fatalf("%d timers left with an empty queue", clock.Pending())
	}
}

func TestDispatcherRotateCancelsQueuedKeepsLease(t *testing.T) {
	d, _ := newDispatcher(t, admit.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute})
	d.Rotate("a", 1)
	d.Rotate("b", 1)
	a1 := submit(t, d, "a1", "a", 1, t0)
	a2 := submit(t, d, "a2", "a", 1, t0)
	b1 := submit(t, d, "b1", "b", 1, t0)
	resolved(t, a1, admit.Admitted, t0)
	if err := d.Rotate("a", 2); err != nil {
		t.Fatal(err)
	}
	resolved(t, a2, admit.Cancelled, t0)
	pending(t, b1) // a1's lease is held until its cleanup is confirmed
	if s := d.Controller().Snapshot(t0); s.CleanupPending != 1 || s.Leased != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	if disp, _ := d.Release("a1"); disp != admit.Cancelled {
		t.Fatalf("release = %v", disp)
	}
	resolved(t, b1, admit.Admitted, t0)
}

func TestDispatcherCancelAndForget(t *testing.T) {
	d, _ := newDispatcher(t, admit.Limits{Slots: 1, Waiting: 3, MaxAge: time.Minute})
	d.Rotate("a", 1)
	d.Rotate("b", 1)
	submit(t, d, "a1", "a", 1, t0)
	b1 := submit(t, d, "b1", "b", 1, t0)
	b2 := submit(t, d, "b2", "b", 1, t0)
	if _, err := d.Cancel("b1"); err != nil {
		t.Fatal(err)
	}
	resolved(t, b1, admit.Cancelled, t0)
	d.Forget("b")
	resolved(t, b2, admit.Cancelled, t0)
	if s := d.Controller().Snapshot(t0); s.Queued != 0 {
		t.Fatalf("queued %d", s.Queued)
	}
}

func ExampleDispatcher() {
	c, _ := admit.New(admit.Limits{Slots: 1, Waiting: 8, MaxAge: 2 * time.Second})
	d := admit.NewDispatcher(c, nil)
	defer d.Stop()

	_ = d.Rotate("call-1", 1)
	born := time.Now()
	ticket, disp, _ := d.Submit(admit.Job{ID: "turn-1/model", Owner: "call-1", Generation: 1, Born: born})
	fmt.Println("offer:", disp)
	<-ticket.Done()
	result, _ := ticket.Result()
	fmt.Println("take:", result)
	// ... run the backend; when it has returned (stopped using the resource):
	release, _ := d.Release(ticket.Job.ID)
	fmt.Println("release:", release)
	// Output:
	// offer: queued
	// take: admitted
	// release: completed
}
