package fallback

import (
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// claimQueue admits fallback work only when a human claims it. It owns the
// stage's Controller operations and one timer at the head's deadline, which
// expires old heads without admitting anything. Every job is its own owner
// (generation 0), registered at offer and forgotten once terminal, so the
// Controller's owner table stays as small as its inventory.
type claimQueue struct {
	c        *stages.Controller
	clock    stages.Clock
	onExpire func(ids []string) // called without mu, from the timer

	mu      sync.Mutex
	alarm   stages.Alarm // the head's deadline
	stopped bool
}

func newClaimQueue(l stages.Limits, clock stages.Clock) (*claimQueue, error) {
	c, err := stages.New(l)
	if err != nil {
		return nil, err
	}
	return &claimQueue{c: c, clock: clock}, nil
}

// offer queues job; refused work leaves nothing behind. It returns the ids
// that expired at the head meanwhile.
func (q *claimQueue) offer(job stages.Job) (stages.Disposition, []string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	if job.Born.After(now) {
		job.Born = now
	}
	expired := q.expire(now)
	if _, ok := q.c.Generation(job.Owner); !ok {
		if err := q.c.Rotate(job.Owner, job.Generation, now); err != nil {
			return 0, expired, err
		}
	}
	d, err := q.c.Offer(job, now)
	if err != nil || d != stages.Queued {
		q.c.Forget(job.Owner, now)
	}
	q.arm(now)
	return d, expired, err
}

// room reports whether an offer now would find a waiting place.
func (q *claimQueue) room() bool {
	s := q.c.Snapshot(q.clock.Now())
	return !s.Closed && s.Queued < s.Limits.Waiting
}

// claim takes the head of the queue: (Admitted, id) with a lease, or Busy,
// Empty or Closed. With want set, it admits only if want is the head
// (fairness: the longest waiting caller goes first) and otherwise returns
// (Busy-free) Queued to say want waits behind others.
func (q *claimQueue) claim(want string) (stages.Disposition, string, []string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	expired := q.expire(now)
	defer q.arm(now)
	if want != "" {
		if pos, ok := q.c.Position(want); !ok {
			d, _ := q.c.State(want)
			return d, "", expired, nil
		} else if pos != 1 {
			return stages.Queued, "", expired, nil
		}
	}
	d, id, err := q.c.Take(now)
	return d, id, expired, err
}

// release returns id's lease. Work that is done with is forgotten.
func (q *claimQueue) release(id, owner string) (stages.Disposition, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	d, err := q.c.Release(id)
	q.c.Forget(owner, now)
	q.arm(now)
	return d, err
}

// cancel withdraws id: queued work leaves the queue; active work is
// cancelled and, since a human claim holds no backend to wait for, its
// lease is released at once. It returns the state before cancellation
// when that was terminal, else Cancelled.
func (q *claimQueue) cancel(id, owner string) stages.Disposition {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	st, ok := q.c.State(id)
	if !ok {
		return 0
	}
	d := st
	switch st {
	case stages.Queued:
		d, _ = q.c.Cancel(id, now)
	case stages.Active:
		q.c.Cancel(id, now)
		d, _ = q.c.Release(id)
	case stages.Cancelled: // cancelled while active, lease still held
		d, _ = q.c.Release(id)
	}
	q.c.Forget(owner, now)
	q.arm(now)
	return d
}

// expire removes heads older than MaxAge, under mu, without admitting.
func (q *claimQueue) expire(now time.Time) []string {
	var out []string
	maxAge := q.c.Limits().MaxAge
	for {
		w := q.c.Waiting(now)
		if len(w) == 0 || w[0].Age <= maxAge {
			return out
		}
		d, id, err := q.c.Take(now)
		if err != nil || d != stages.Expired {
			return out // cannot happen: the head is past its age
		}
		q.c.Forget(w[0].Owner, now)
		out = append(out, id)
	}
}

// arm sets the timer for the head's deadline, under mu.
func (q *claimQueue) arm(now time.Time) {
	if q.stopped {
		return
	}
	w := q.c.Waiting(now)
	if len(w) == 0 {
		q.alarm.Clear()
		return
	}
	q.alarm.Set(q.clock, now.Add(q.c.Limits().MaxAge-w[0].Age+time.Nanosecond), now, q.fire)
}

func (q *claimQueue) fire(seq uint64) {
	q.mu.Lock()
	if q.stopped || !q.alarm.Fired(seq) {
		q.mu.Unlock()
		return
	}
	now := q.clock.Now()
	expired := q.expire(now)
	q.arm(now)
	q.mu.Unlock()
	if len(expired) > 0 && q.onExpire != nil {
		q.onExpire(expired)
	}
}

// stop ends the timer; nothing expires afterwards.
func (q *claimQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	q.alarm.Clear()
}
