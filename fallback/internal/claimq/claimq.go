// Package claimq is one fallback queue of one process, as fallback's
// in-process queues (localCallbacks, localHandoffs) use it: a
// claim.Gate adapted to their locking.
package claimq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// Queue is one fallback queue as an in-process queue uses it: a
// claim.Gate (the in-process Dispatcher made ClaimOnly), whose take
// is a human's claim and whose timer expires the head at its deadline, and
// the Pending of each piece of work it holds. Admission, bounds, expiry and
// the ledger are the gate's, under the conformance suite
// (stagestest.RunClaimGate); this type only adapts it to its owner's
// locking. Every job is its own owner (generation 0), registered at offer
// and forgotten once terminal, so the owner table stays as small as the
// inventory.
//
// Expiry is learnt through the gate's OnResolve, outside its lock. Every
// operation of this queue is made under its owner's lock (localCallbacks.mu,
// localHandoffs.mu): ids that expire during one are collected and handed to
// ExpiredLocked as it ends, by the caller that holds that lock; ids the
// gate's timer expires otherwise go to OnExpire, which takes the lock.
// Set both before the first operation.
type Queue struct {
	OnExpire      func(ids []string) // called without the owner's lock, from the gate's timer
	ExpiredLocked func(ids []string) // called at the end of an operation, under it

	g     *claim.Local // the in-process ClaimGate, also for views and draining
	clock clock.Clock

	mu      sync.Mutex
	busy    int      // operations in progress
	expired []string // expired while busy, for the operation to return
	pending map[string]stages.Pending
	stopped bool
}

// New returns an empty queue with limits l on clock.
func New(l stages.Limits, clock clock.Clock) (*Queue, error) {
	q := &Queue{clock: clock, pending: map[string]stages.Pending{}}
	g, err := claim.New(l, clock, q.resolved)
	if err != nil {
		return nil, err
	}
	q.g = g
	return q, nil
}

// resolved is the gate's OnResolve.
func (q *Queue) resolved(id string, d stages.Disposition) {
	q.mu.Lock()
	if d != stages.Admitted {
		delete(q.pending, id)
	}
	if d != stages.Expired || q.stopped {
		q.mu.Unlock()
		return
	}
	if q.busy > 0 {
		q.expired = append(q.expired, id)
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	if q.OnExpire != nil {
		q.OnExpire([]string{id})
	}
}

// begin and end bracket an operation; end hands what expired meanwhile to
// ExpiredLocked.
func (q *Queue) begin() {
	q.mu.Lock()
	q.busy++
	q.mu.Unlock()
}

func (q *Queue) end() {
	q.mu.Lock()
	q.busy--
	out := q.expired
	q.expired = nil
	q.mu.Unlock()
	if len(out) > 0 && q.ExpiredLocked != nil {
		q.ExpiredLocked(out)
	}
}

// Offer queues job; refused work leaves nothing behind.
func (q *Queue) Offer(job stages.Job) (stages.Disposition, error) {
	ctx := context.Background() // an in-process gate never waits
	q.begin()
	defer q.end()
	if now := q.clock.Now(); job.Born.After(now) {
		job.Born = now
	}
	// Every job is its own owner: registered here, at generation 0 (an
	// owner known already is left as it is).
	if err := q.g.Rotate(ctx, job.Owner, job.Generation); err != nil && !errors.Is(err, stages.ErrGeneration) {
		return 0, err
	}
	p, d, err := q.g.Submit(ctx, job)
	if err != nil || d != stages.Queued {
		_ = q.g.Forget(ctx, job.Owner)
	} else {
		q.mu.Lock()
		select {
		case <-p.Done(): // resolved already (expired on arrival): resolved saw it
		default:
			q.pending[job.ID] = p
		}
		q.mu.Unlock()
	}
	return d, err
}

// Room reports whether an offer now would find a waiting place.
func (q *Queue) Room() bool {
	s := q.Snapshot()
	return !s.Closed && s.Queued < s.Limits.Waiting
}

// Position is id's place among waiting work, 1 next.
func (q *Queue) Position(id string) (int, bool) {
	q.mu.Lock()
	p := q.pending[id]
	q.mu.Unlock()
	if p == nil {
		return 0, false
	}
	n, ok, _ := p.Position(context.Background())
	return n, ok
}

// Claim takes the head of the queue: (Admitted, id) with a lease, or Busy,
// Empty or Closed. With want set, it admits only if want is the head
// (fairness: the longest waiting caller goes first) and otherwise returns
// Queued to say want waits behind others.
func (q *Queue) Claim(want string) (stages.Disposition, string, error) {
	q.begin()
	defer q.end()
	return q.g.Claim(context.Background(), want)
}

// Release returns id's lease. Work that is done with is forgotten.
func (q *Queue) Release(id, owner string) (stages.Disposition, error) {
	return q.release(id, owner, q.g.Release)
}

// ReleaseFailed is Release counted Failed in the ledger.
func (q *Queue) ReleaseFailed(id, owner string) (stages.Disposition, error) {
	return q.release(id, owner, q.g.ReleaseFailed)
}

func (q *Queue) release(id, owner string, release func(context.Context, string) (stages.Disposition, error)) (stages.Disposition, error) {
	ctx := context.Background()
	q.begin()
	defer q.end()
	d, err := release(ctx, id)
	_ = q.g.Forget(ctx, owner)
	q.mu.Lock()
	delete(q.pending, id)
	q.mu.Unlock()
	return d, err
}

// Refuse counts in the gate's ledger an offer that its owner refused before
// the gate, as Stale or Expired: the gate is offered a job it refuses so,
// under an owner of its own that is forgotten at once, so that nothing else
// changes.
func (q *Queue) Refuse(d stages.Disposition) error {
	ctx := context.Background()
	q.begin()
	defer q.end()
	const owner = "\x00refused" // no job's: jobs are their own owners, named by their tickets
	now := q.clock.Now()
	job := stages.Job{ID: owner, Owner: owner, Born: now}
	switch d {
	case stages.Stale:
		job.Generation = 1
	case stages.Expired:
		job.Deadline = now.Add(-time.Nanosecond)
	default:
		return fmt.Errorf("claimq: refuse %v: want stale or expired", d)
	}
	if err := q.g.Rotate(ctx, owner, 2); err != nil && !errors.Is(err, stages.ErrGeneration) {
		return err
	}
	defer q.g.Forget(ctx, owner)
	if d == stages.Expired {
		job.Generation = 2
	}
	_, got, err := q.g.Submit(ctx, job)
	if err == nil && got != d {
		err = fmt.Errorf("claimq: refuse %v: the gate said %v", d, got)
	}
	return err
}

// Cancel withdraws id: queued work leaves the queue; active work is
// cancelled and, since a human claim holds no backend to wait for, its
// lease is released at once. It returns the state before cancellation
// when that was terminal, else Cancelled.
func (q *Queue) Cancel(id, owner string) stages.Disposition {
	ctx := context.Background()
	q.begin()
	defer q.end()
	st, ok := q.g.State(id)
	if !ok {
		return 0
	}
	d := st
	switch st {
	case stages.Queued:
		d, _ = q.g.Cancel(ctx, id)
	case claim.Active:
		_, _ = q.g.Cancel(ctx, id)
		d, _ = q.g.Release(ctx, id)
	case stages.Cancelled: // cancelled while active, lease still held
		d, _ = q.g.Release(ctx, id)
	}
	_ = q.g.Forget(ctx, owner)
	q.mu.Lock()
	delete(q.pending, id)
	q.mu.Unlock()
	return d
}

// ExpireDue expires now the work past its deadline that the gate's timer
// has not reached yet (timers that fall due together run in any order).
// The gate has no operation of its own for it: every operation first
// expires the heads past their deadline, and forgetting an owner nobody
// has ("") is the one that changes nothing else.
func (q *Queue) ExpireDue() {
	q.begin()
	defer q.end()
	_ = q.g.Forget(context.Background(), "")
}

// Stop ends the gate's timer; nothing expires afterwards.
func (q *Queue) Stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.g.Stop()
}

// Gate is the queue's in-process gate, for views and draining (Close,
// Reopen); admission goes through the Queue.
func (q *Queue) Gate() *claim.Local { return q.g }

// Snapshot is the gate's snapshot (an in-process gate never fails).
func (q *Queue) Snapshot() stages.Snapshot {
	s, _ := q.g.Snapshot(context.Background())
	return s
}
