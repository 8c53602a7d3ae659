package load

import (
	"context"
	"sync"
	"time"
)

// inboxLimit is how many events may wait for the caller before its reader
// stops reading (and the server sees a slow reader), as the 64-event
// channel it replaces did, larger because most of them are audio frames
// that wait on purpose.
const inboxLimit = 1024

// inbox carries what a caller's reader reads to the caller's conversation,
// in order. Reply audio is 50 frames a second per caller, and each frame
// only counts (its arrival time is taken by the reader), so the reader
// wakes the conversation only for what it acts on: a text message, an
// error or the end, and the first audio frame after a text message (a
// barge-in is timed from it); the frames after that wait, without a
// wakeup each, for the next of those or for inboxBatch of them. Two slices
// swap between the two sides, so delivery allocates nothing.
type inbox struct {
	mu     sync.Mutex
	q      []event
	closed bool
	ready  chan struct{} // the conversation should look
	room   chan struct{} // the conversation took the queue

	// The conversation's side, owned by it.
	batch []event
	next  int
}

// inboxBatch is how many audio frames may wait without a wakeup.
const inboxBatch = 64

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// put queues ev; urgent wakes the conversation now. It waits while the
// queue is full, and returns false if ctx ends meanwhile.
func (b *inbox) put(ctx context.Context, ev event, urgent bool) bool {
	b.mu.Lock()
	for len(b.q) >= inboxLimit {
		b.mu.Unlock()
		signal(b.ready)
		select {
		case <-b.room:
		case <-ctx.Done():
			return false
		}
		b.mu.Lock()
	}
	b.q = append(b.q, ev)
	n := len(b.q)
	b.mu.Unlock()
	if urgent || n >= inboxBatch {
		signal(b.ready)
	}
	return true
}

// close marks the end of what the reader sends and wakes the conversation.
func (b *inbox) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	signal(b.ready)
}

// take returns the next event; ok is false when the queue is empty, and
// closed is true when it also will stay so.
func (b *inbox) take() (ev event, ok, closed bool) {
	if b.next < len(b.batch) {
		ev = b.batch[b.next]
		b.batch[b.next] = event{}
		b.next++
		return ev, true, false
	}
	b.mu.Lock()
	b.batch, b.q = b.q, b.batch[:0]
	b.next = 0
	closed = b.closed
	b.mu.Unlock()
	signal(b.room)
	if len(b.batch) == 0 {
		return event{}, false, closed
	}
	ev = b.batch[0]
	b.batch[0] = event{}
	b.next = 1
	return ev, true, false
}

// wait returns the next event, waiting until deadline (zero: no deadline)
// or ctx's end. ok is false when the wait ended without an event; at the
// reader's end it returns an errEnded event.
func (b *inbox) wait(ctx context.Context, deadline time.Time) (event, bool) {
	var timeout <-chan time.Time
	for {
		ev, ok, closed := b.take()
		if ok {
			return ev, true
		}
		if closed {
			return event{err: errEnded}, true
		}
		if timeout == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-b.ready:
		case <-timeout:
			return event{}, false
		case <-ctx.Done():
			return event{}, false
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
