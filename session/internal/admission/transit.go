package admission

import (
	"sync"
	"sync/atomic"
)

// Transit counts work between two stages: admitted by one, not yet
// offered to the next (a turn past model admission whose reply has not
// all been offered to synthesis). A drain closes the next stage once
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
