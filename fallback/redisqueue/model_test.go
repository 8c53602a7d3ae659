package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// queueModel is the handoff queue as a plain FIFO with claim slots: what
// the Lua scripts must agree with after every step.
type queueModel struct {
	bound, slots int
	order        []string          // every ticket ever queued, in enqueue order
	state        map[string]string // pending, claimed, or terminal
	attempt      map[string]int
}

func (m *queueModel) waiting() []string {
	var out []string
	for _, t := range m.order {
		if m.state[t] == "pending" {
			out = append(out, t)
		}
	}
	return out
}

func (m *queueModel) claimed() []string {
	var out []string
	for _, t := range m.order {
		if m.state[t] == "claimed" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// TestHandoffQueueModel drives the Redis queue and the model with the same
// random steps (enqueue, claim the head or a named ticket, ack, release,
// cancel, and a claimant with a stale attempt) and checks after each one
// that both hold the same waiting order, positions and claims, within the
// bounds, with a balanced ledger.
func TestHandoffQueueModel(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			rt.Fatal(err)
		}
		cfg := fallback.DefaultConfig()
		cfg.HandoffQueue = rapid.IntRange(1, 4).Draw(rt, "bound")
		cfg.HandoffSlots = rapid.IntRange(1, 3).Draw(rt, "slots")
		cfg.HandoffMaxWait = time.Hour
		q := redisqueue.NewHandoffQueue(rdb, "model", cfg, time.Minute)
		m := &queueModel{bound: cfg.HandoffQueue, slots: cfg.HandoffSlots, state: map[string]string{}, attempt: map[string]int{}}
		n := 0
		pick := func(label string) string {
			if len(m.order) == 0 {
				return "ho_none"
			}
			return rapid.SampledFrom(m.order).Draw(rt, label)
		}
		for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			switch op := rapid.IntRange(0, 6).Draw(rt, "op"); op {
			case 0: // enqueue
				n++
				tk := fmt.Sprintf("ho_%03d", n)
				_, d, err := q.Enqueue(ctx, fallback.HandoffEntry{Ref: tk, Call: "c" + tk, Turn: "t", Born: time.Now()})
				want := stages.Queued
				if len(m.waiting()) >= m.bound {
					want = stages.Overloaded
				}
				if err != nil || d != want {
					rt.Fatalf("step %d enqueue %s: %v %v, want %v", step, tk, d, err, want)
				}
				if d == stages.Queued {
					m.order = append(m.order, tk)
					m.state[tk] = "pending"
				}
			case 1, 2: // claim the head, or a named ticket
				var tk string
				if op == 2 {
					tk = pick("claim")
				}
				e, err := q.Claim(ctx, "agent", tk, time.Now())
				w := m.waiting()
				var want error
				switch {
				case tk != "" && m.state[tk] == "claimed":
					want = fallback.ErrHandoffTaken
				case tk != "" && m.state[tk] != "pending", tk == "" && len(w) == 0:
					want = fallback.ErrHandoffUnknown
				case tk != "" && w[0] != tk:
					want = fallback.ErrHandoffNotNext
				case len(m.claimed()) >= m.slots:
					want = fallback.ErrSlotsBusy
				}
				if want != nil {
					if !errors.Is(err, want) {
						rt.Fatalf("step %d claim %q: %v, want %v", step, tk, err, want)
					}
					break
				}
				if err != nil || e.Ref != w[0] || e.Attempt != m.attempt[w[0]]+1 {
					rt.Fatalf("step %d claim %q: %+v %v, want %s", step, tk, e, err, w[0])
				}
				m.state[w[0]] = "claimed"
				m.attempt[w[0]]++
			case 3, 4: // ack or release with the current attempt
				tk := pick("settle")
				var err error
				if op == 3 {
					_, err = q.Ack(ctx, tk, m.attempt[tk], time.Now())
				} else {
					_, err = q.Release(ctx, tk, m.attempt[tk], time.Now())
				}
				if m.state[tk] != "claimed" {
					if !errors.Is(err, fallback.ErrHandoffLost) {
						rt.Fatalf("step %d settle unclaimed %s: %v", step, tk, err)
					}
					break
				}
				if err != nil {
					rt.Fatalf("step %d settle %s: %v", step, tk, err)
				}
				m.state[tk] = map[int]string{3: "completed", 4: "pending"}[op]
			case 5: // the caller hangs up
				tk := pick("cancel")
				if _, err := q.Resolve(ctx, tk, fallback.HandoffCancelled); err != nil && !errors.Is(err, fallback.ErrHandoffUnknown) {
					rt.Fatalf("step %d cancel %s: %v", step, tk, err)
				}
				if s := m.state[tk]; s == "pending" || s == "claimed" {
					m.state[tk] = "cancelled"
				}
			case 6: // a claimant whose attempt was superseded
				tk := pick("stale")
				if m.attempt[tk] == 0 {
					break
				}
				if _, err := q.Ack(ctx, tk, m.attempt[tk]-1, time.Now()); !errors.Is(err, fallback.ErrHandoffLost) {
					rt.Fatalf("step %d stale ack %s: %v", step, tk, err)
				}
			}
			checkModel(ctx, rt, q, m)
		}
	})
}

func checkModel(ctx context.Context, rt *rapid.T, q *redisqueue.HandoffQueue, m *queueModel) {
	l, err := q.List(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	var waiting, claimed []string
	for _, e := range l {
		switch e.State {
		case fallback.HandoffWaiting:
			waiting = append(waiting, e.Ref)
			if e.Position != len(waiting) {
				rt.Fatalf("%s at position %d, want %d", e.Ref, e.Position, len(waiting))
			}
		case fallback.HandoffClaimed:
			claimed = append(claimed, e.Ref)
		default:
			rt.Fatalf("listed %+v", e)
		}
	}
	slices.Sort(claimed)
	if !slices.Equal(waiting, m.waiting()) || !slices.Equal(claimed, m.claimed()) {
		rt.Fatalf("queue waiting %v claimed %v; model %v %v", waiting, claimed, m.waiting(), m.claimed())
	}
	sn, err := q.Snapshot(ctx, time.Now())
	if err != nil {
		rt.Fatal(err)
	}
	// A claim that comes back keeps its place even past the waiting bound
	// (nobody who was promised a place loses it); new work is refused
	// meanwhile, so the live total stays within bound + slots.
	if sn.Queued != len(waiting) || sn.Leased != len(claimed) || sn.Queued+sn.Leased > m.bound+m.slots || sn.Leased > m.slots {
		rt.Fatalf("snapshot %d queued %d leased; listed %d %d; bounds %d %d", sn.Queued, sn.Leased, len(waiting), len(claimed), m.bound, m.slots)
	}
	if err := sn.Ledger.Check(sn.Queued, sn.Leased); err != nil {
		rt.Fatalf("%v: %+v", err, sn.Ledger)
	}
}
