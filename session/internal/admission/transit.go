package admission

import (
	"context"
	"sync"
	"sync/atomic"
)

// Transit counts work between two stages: admitted by one, not yet
// offered to the next (a running turn whose reply has not all been
// offered to synthesis). A drain closes the next stage once
// none is in transit, waiting on Zero instead of polling.
type Transit struct {
	n  atomic.Int64
	mu sync.Mutex
	ch chan struct{} // signalled (never closed) each time n reaches zero
}

// Add adds delta to the work in transit.
func (t *Transit) Add(delta int64) {
	if t.n.Add(delta) == 0 {
		select {
		case t.Zero() <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

// Busy reports whether any work is in transit.
func (t *Transit) Busy() bool { return t.n.Load() != 0 }

// Zero is signalled each time the work in transit reaches zero.
func (t *Transit) Zero() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ch == nil {
		t.ch = make(chan struct{}, 1)
	}
	return t.ch
}

// Inbox is the queue of work between two stages of one pipeline: what the
// stage before made, in order, and whether it is done. Put never blocks
// (its producer bounds what it puts); Next waits.
type Inbox struct {
	mu     sync.Mutex
	ready  []string
	closed bool
	wake   chan struct{} // a token when ready or closed changed
}

// NewInbox returns an empty inbox, or with items, one already done.
func NewInbox(items ...string) *Inbox {
	if len(items) > 0 {
		return &Inbox{ready: items, closed: true}
	}
	return &Inbox{wake: make(chan struct{}, 1)}
}

// Put adds s; Close says the stage before is done.
func (q *Inbox) Put(s string) { q.update(func() { q.ready = append(q.ready, s) }) }
func (q *Inbox) Close()       { q.update(func() { q.closed = true }) }

func (q *Inbox) update(f func()) {
	q.mu.Lock()
	f()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Next waits for the next item: false once the stage before is done and
// every item was taken, or when ctx ends.
func (q *Inbox) Next(ctx context.Context) (string, bool) {
	for {
		q.mu.Lock()
		ready, closed := q.ready, q.closed
		if len(ready) > 0 {
			q.ready = ready[1:]
		}
		q.mu.Unlock()
		switch {
		case len(ready) > 0:
			return ready[0], true
		case closed:
			return "", false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return "", false
		}
	}
}
