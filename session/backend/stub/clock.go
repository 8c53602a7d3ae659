package stub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// clockSlots is how many groups a clock's period is cut into: calls are
// spread over them, so that a thousand calls do not all emit their frames
// at the same instant.
const clockSlots = 4

// clock is one ticker shared by every call of a synthesizer, a wheel of
// clockSlots slots: a call keeps its slot, and each tick (every
// period/clockSlots on src) makes the next step of every job of one slot,
// one after another on the tick's goroutine (run). Its ticks start with
// the first job and stop at the first full turn of the wheel that finds
// none.
type clock struct {
	period time.Duration
	src    backend.Clock
	next   atomic.Uint32 // the slot of the next call

	mu      sync.Mutex
	waiters int // the jobs in the slots
	running bool
	slot0   int                // the slot the next tick steps
	idle    int                // ticks in a row that found no job
	due     time.Time          // when the next tick is due
	jobs    [clockSlots][]*job // slot k's jobs, stepped at its tick (run)
	batch   []*job             // fire's copy of a slot's jobs, reused
}

// job is a run's step, called on the clock's tick until it is done.
type job struct {
	mu       sync.Mutex // held while step runs: a tick that finds it held skips it
	step     func() (more bool, err error)
	finished bool
	err      error
	done     chan struct{} // closed once step said no more, or failed
}

func newClock(period time.Duration, src backend.Clock) *clock {
	return &clock{period: period, src: backend.ClockOr(src)}
}

// slot returns the slot of a new call.
func (k *clock) slot() int { return int(k.next.Add(1) % clockSlots) }

// run calls step at each of slot's ticks, on the clock's goroutine, until
// it returns more false or an error (which run returns), or ctx ends.
// No call waits on a tick of its own: a thousand calls' steps are made
// one after another at a tick, as one writer writes every call's frame.
// A step still running at the slot's next tick (its write blocked) is
// skipped that tick; run returns only once no step of it runs.
func (k *clock) run(ctx context.Context, slot int, step func() (bool, error)) error {
	if k.period <= 0 {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			if more, err := step(); !more || err != nil {
				return err
			}
		}
	}
	j := &job{step: step, done: make(chan struct{})}
	k.mu.Lock()
	k.startLocked()
	k.waiters++
	k.jobs[slot] = append(k.jobs[slot], j)
	k.mu.Unlock()
	defer k.remove(slot, j)
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
	}
	j.mu.Lock() // a step running ends first
	j.finished = true
	j.mu.Unlock()
	return ctx.Err()
}

func (k *clock) remove(slot int, j *job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.waiters--
	js := k.jobs[slot]
	for i, x := range js {
		if x == j {
			js[i] = js[len(js)-1]
			js[len(js)-1] = nil
			k.jobs[slot] = js[:len(js)-1]
			return
		}
	}
}

// stepJobs makes one step of each of js that is not finished or running.
func stepJobs(js []*job) {
	for _, j := range js {
		if !j.mu.TryLock() {
			continue
		}
		if !j.finished {
			if more, err := j.step(); !more || err != nil {
				j.finished, j.err = true, err
				close(j.done)
			}
		}
		j.mu.Unlock()
	}
}

// armLocked schedules the next tick a step after the last one was due,
// so that the wheel does not drift by the timer's latency; a wheel fallen
// a whole step behind starts again from now.
func (k *clock) armLocked() {
	step := k.period / clockSlots
	k.due = k.due.Add(step)
	d := k.due.Sub(k.src.Now())
	if d <= 0 {
		k.due, d = k.src.Now().Add(step), step
	}
	k.src.AfterFunc(d, k.fire)
}

// startLocked starts the ticks if they are stopped.
func (k *clock) startLocked() {
	if k.running {
		return
	}
	k.running = true
	k.slot0, k.idle = 0, 0
	k.due = k.src.Now()
	k.armLocked()
}

// fire is one tick: it arms the next tick (unless a full turn found no
// job), and steps the jobs of one slot.
func (k *clock) fire() {
	k.mu.Lock()
	i := k.slot0
	k.slot0 = (i + 1) % clockSlots
	if k.waiters > 0 {
		k.idle = 0
	} else if k.idle++; k.idle >= clockSlots {
		k.running = false
		k.mu.Unlock()
		return
	}
	k.armLocked()
	js := append(k.batch[:0], k.jobs[i]...)
	k.batch = nil // the next tick's fire may run while this one steps
	k.mu.Unlock()
	stepJobs(js)
	clear(js)
	k.mu.Lock()
	k.batch = js
	k.mu.Unlock()
}
