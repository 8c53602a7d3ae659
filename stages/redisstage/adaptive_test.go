package redisstage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// TestFleetAdaptiveConverges: two replicas on one real redis-server, each
// with its own adaptive rule fed by its own work, share one slot limit; a
// backend whose capacity drops from 8 to 3 jobs at full speed, then rises
// to 12, is followed by that one limit within 5 s (on the test's clock) of
// each change, and no lease is ever granted over the limit in force.
func TestFleetAdaptiveConverges(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	clock := stagestest.NewClock(stagestest.Epoch)
	l := stages.Limits{Slots: 4, Waiting: 200, MaxAge: time.Hour}
	cfg := adaptive.Config{Min: 1, Max: 40, Window: 500 * time.Millisecond}
	name := fmt.Sprint("adaptive", stageSeq.Add(1))
	type replica struct {
		d       *redisstage.Dispatcher
		g       *admit.AdaptiveGate
		pending []*redisstage.Ticket
	}
	var rs []*replica
	for range 2 {
		s, err := redisstage.New(srv.Client(t), name, l, redisstage.Options{Warmup: -1})
		if err != nil {
			t.Fatal(err)
		}
		d := redisstage.NewDispatcher(s, redisstage.DispatcherOptions{Clock: clock, Poll: 10 * time.Millisecond})
		t.Cleanup(d.Stop)
		g, err := admit.NewAdaptiveGate(ctx, d, cfg, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Rotate(ctx, "o", 1); err != nil && len(rs) == 0 {
			t.Fatal(err)
		}
		rs = append(rs, &replica{d: d, g: g})
	}
	type lease struct {
		r    *replica
		id   string
		from time.Time
		end  time.Time
	}
	var held []lease
	base := 100 * time.Millisecond
	k := 8.0
	seq := 0
	limitNow := func() int {
		sn, err := rs[0].d.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sn.Limits.Slots
	}
	step := func() {
		clock.Advance(10 * time.Millisecond)
		now := clock.Now()
		keep := held[:0]
		for _, h := range held { // the backend answers: the signal, then the release
			if now.Before(h.end) {
				keep = append(keep, h)
				continue
			}
			h.r.g.Observe(h.end.Sub(h.from), false)
			if _, err := h.r.d.Release(ctx, h.id); err != nil {
				t.Fatal(err)
			}
		}
		held = keep
		for _, r := range rs {
			for len(r.pending) < 10 { // more work than any limit admits
				seq++
				p, d, err := r.d.SubmitTicket(ctx, stages.Job{ID: fmt.Sprint("j", seq), Owner: "o", Generation: 1, Born: now})
				if err != nil || d != stages.Queued {
					t.Fatalf("submit: %v %v", d, err)
				}
				r.pending = append(r.pending, p)
			}
		}
		time.Sleep(2 * time.Millisecond) // let the admissions' events arrive
		for _, r := range rs {
			waiting := r.pending[:0]
			for _, p := range r.pending {
				select {
				case <-p.Done():
					if res, _ := p.Result(); res != stages.Admitted {
						t.Fatalf("ticket %s: %v", p.Job.ID, res)
					}
					// Latency from admission, stretched by everything
					// running on the backend at once (processor sharing).
					lat := time.Duration(float64(base) * max(1, float64(len(held)+1)/k))
					held = append(held, lease{r: r, id: p.Job.ID, from: now, end: now.Add(lat)})
				default:
					waiting = append(waiting, p)
				}
			}
			r.pending = waiting
		}
		if lim := limitNow(); len(held) > lim+2*len(rs) {
			// Admissions seen in this step were granted under the limit
			// in force then; allow for the ones granted just before a
			// lowering, which drain.
			t.Fatalf("%d leases held, limit %d", len(held), lim)
		}
	}
	for _, phase := range []struct {
		k    float64
		name string
	}{{8, "start"}, {3, "capacity down"}, {12, "capacity up"}} {
		k = phase.k
		var settled time.Duration = -1
		start := clock.Now()
		for clock.Now().Sub(start) < 8*time.Second {
			step()
			lim := float64(limitNow())
			if testing.Verbose() && clock.Now().Sub(start)%(250*time.Millisecond) == 0 {
				t.Logf("%v k=%v limit %v held %d %+v", clock.Now().Sub(start), k, lim, len(held), rs[0].g.Status().Estimate)
			}
			in := lim >= k && lim <= 2.5*k
			switch {
			case in && settled < 0:
				settled = clock.Now().Sub(start)
			case !in && clock.Now().Sub(start) > 5*time.Second:
				t.Fatalf("%s (k=%v): limit %v left [k, 2.5k] after settling at %v", phase.name, k, lim, settled)
			}
		}
		if settled < 0 || settled > 5*time.Second {
			t.Fatalf("%s (k=%v): limit %d not within [k, 2.5k] within 5 s (settled %v)", phase.name, k, limitNow(), settled)
		}
		a, b := rs[0].g.Status(), rs[1].g.Status()
		t.Logf("%s: k=%v settled in %v; limit %d; moves by replica: %d, %d", phase.name, k, settled, limitNow(), a.Changes, b.Changes)
	}
	for _, r := range rs { // both replicas show the one limit
		sn, err := r.g.Snapshot(ctx)
		if err != nil || sn.Limits.Slots != limitNow() || sn.Adaptive == nil {
			t.Fatalf("replica snapshot %+v, %v; limit %d", sn.Limits, err, limitNow())
		}
	}
	for _, h := range held {
		_, _ = h.r.d.Release(ctx, h.id)
	}
}
