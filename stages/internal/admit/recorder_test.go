package admit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// opLog keeps every recorded operation as one short line.
type opLog struct{ lines []string }

func (l *opLog) Record(op admit.Operation) {
	s := fmt.Sprintf("%s@%v", op.Op, op.At.Sub(t0))
	if op.ID != "" {
		s += " " + op.ID
	}
	if op.Owner != "" {
		s += " owner=" + op.Owner
	}
	if op.Op == admit.OpOffer || op.Op == admit.OpRotate {
		s += fmt.Sprintf(" gen=%d", op.Generation)
	}
	if op.Op == admit.OpOffer {
		s += fmt.Sprintf(" born=%v", op.Born.Sub(t0))
		if op.Tenant != "" {
			s += " tenant=" + op.Tenant
		}
	}
	if op.Disposition != 0 {
		s += " -> " + op.Disposition.String()
	}
	if op.Err != nil {
		s += " err"
	}
	l.lines = append(l.lines, s)
}

// TestRecorderSeesEveryOperation drives a Controller through its Dispatcher
// (the paths the server uses: Submit, Release, Rotate, Cancel, Forget,
// Close, Reopen, the expiry timer and Stop) and checks that the recorder saw
// every operation in order, with its time and outcome.
func TestRecorderSeesEveryOperation(t *testing.T) {
	var log opLog
	clock := stagestest.NewClock(t0)
	c, err := admit.New(admit.Limits{Slots: 1, Waiting: 2, MaxAge: time.Second},
		admit.WithRecorder(&log))
	if err != nil {
		t.Fatal(err)
	}
	advance := clock.Advance
	d := admit.NewDispatcher(c, clock)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Rotate("a", 1))
	must(d.Rotate("b", 1))
	if _, disp, _ := d.Submit(admit.Job{ID: "a1", Owner: "a", Generation: 1, Born: t0, Tenant: "acme"}); disp != admit.Queued {
		t.Fatal(disp)
	}
	d.Submit(admit.Job{ID: "b1", Owner: "b", Generation: 1, Born: t0})
	d.Submit(admit.Job{ID: "b2", Owner: "b", Generation: 1, Born: t0})
	d.Submit(admit.Job{ID: "b3", Owner: "b", Generation: 1, Born: t0}) // overloaded
	advance(500 * time.Millisecond)
	must(d.Rotate("a", 2)) // a1 cancelled while active
	if err := d.Rotate("a", 2); !errors.Is(err, admit.ErrGeneration) {
		t.Fatal(err)
	}
	if disp, _ := d.Cancel("b2"); disp != admit.Cancelled {
		t.Fatal(disp)
	}
	advance(time.Second) // b1 expires: the dispatcher's timer
	if _, err := d.Release("a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Release("a1"); !errors.Is(err, admit.ErrNoLease) {
		t.Fatal(err)
	}
	d.Close()
	d.Reopen()
	d.Forget("b")
	d.Stop()
	want := []string{
		"rotate@0s owner=a gen=1",
		"take@0s -> empty",
		"rotate@0s owner=b gen=1",
		"take@0s -> empty",
		"offer@0s a1 owner=a gen=1 born=0s tenant=acme -> queued",
		"take@0s a1 -> admitted",
		"take@0s -> empty",
		"offer@0s b1 owner=b gen=1 born=0s -> queued",
		"take@0s -> busy",
		"offer@0s b2 owner=b gen=1 born=0s -> queued",
		"take@0s -> busy",
		"offer@0s b3 owner=b gen=1 born=0s -> overloaded",
		"rotate@500ms owner=a gen=2",
		"take@500ms -> busy",
		"rotate@500ms owner=a gen=2 err",
		"cancel@500ms b2 -> cancelled",
		"take@500ms -> busy",
		"take@1.000000001s b1 -> expired",
		"take@1.000000001s -> empty",
		"release@1.5s a1 -> cancelled",
		"take@1.5s -> empty",
		"release@1.5s a1 err",
		"close@1.5s",
		"reopen@1.5s",
		"take@1.5s -> empty",
		"forget@1.5s owner=b",
		"take@1.5s -> empty",
		"stop@1.5s",
	}
	if got := strings.Join(log.lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("recorded:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// ring is a recorder that keeps the last operations without allocating.
type ring struct {
	ops [64]admit.Operation
	n   int
}

func (r *ring) Record(op admit.Operation) { r.ops[r.n%len(r.ops)] = op; r.n++ }

// TestRecorderAllocs: an admission cycle allocates nothing, without a
// recorder and with one that does not allocate itself.
func TestRecorderAllocs(t *testing.T) {
	for _, rec := range []admit.Recorder{nil, &ring{}} {
		var opts []admit.Option
		if rec != nil {
			opts = append(opts, admit.WithRecorder(rec))
		}
		c, err := admit.New(admit.Limits{Slots: 1, Waiting: 4, MaxAge: time.Hour, Tombstones: 64}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c.Rotate("call", 1, t0)
		ids := make([]string, 256)
		for i := range ids {
			ids[i] = fmt.Sprint("turn-", i)
		}
		now := t0.Add(time.Second)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			id := ids[i%len(ids)]
			i++
			c.Offer(admit.Job{ID: id, Owner: "call", Generation: 1, Born: t0}, now)
			c.Take(now)
			c.Release(id)
		})
		if allocs != 0 {
			t.Errorf("recorder %T: %v allocations per cycle, want 0", rec, allocs)
		}
		if r, ok := rec.(*ring); ok && r.n < 3000 {
			t.Errorf("recorder saw %d operations, want 3 per cycle", r.n)
		}
	}
}
