// Package pace is the engine's shared pacer of prompt audio: parked call
// writers under one timer on the engine's clock, resumed by a few workers.
package pace

import (
	"container/heap"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// At 10x overload thousands of refused callers hear a prompt at once. With
// a writer goroutine per call waiting on a timer of its own for each 20 ms
// frame, every prompt frame costs a timer and a goroutine wake, and the
// two cores go to the refused while the admitted wait for CPU. So prompt
// audio is paced by one engine-wide Pacer instead:
//
//   - A call's writer that reaches a prompt frame not yet due does not
//     wait: it parks (package session/internal/outbound, Queue.park),
//     leaving the frame held in its writer's state, and its goroutine
//     ends. The writer still counts as running: no other writer starts
//     for the call, so the single-writer promise holds, and the held frame
//     goes through the same generation and premise checks when it resumes.
//   - The pacer keeps the parked writers in a heap by due time under one
//     timer on the engine's clock. When it fires, the due writers move to
//     a run queue, and a few workers (GOMAXPROCS, at least 2) take them one
//     after another: each resumed writer writes its due frames and the
//     control messages queued meanwhile, then parks again for its next
//     frame, or stops when its queue is empty. At a tick, thousands of due
//     frames cost one timer and a few goroutine wakes.
//   - A control message queued for a parked writer (an offer's answer, an
//     `interrupted`, a new prompt) or a discarded queue resumes it at once
//     (kick): control messages never wait for a frame's time.
//
// The hand-off is bounded and never blocks: each call is in the heap or
// the run queue at most once live (an entry of an earlier park is
// recognized by its epoch and dropped), the timer callback only moves
// entries and starts workers, and a write that stalls holds only the
// worker making it. A worker that has been on one writer for a period
// (20 ms) or more counts as held by a stalled write: the next tick (the
// timer is armed a period ahead while writers wait in the run queue)
// starts others in its place, up to max free workers, so that a stalled
// caller delays the others by at most a period or two; the stalled write
// itself ends within twice session.OutboundLimits.Timeout (stallWatch). Workers
// end as soon as the run queue is empty, and the timer is armed only
// while a writer is parked or queued: an engine that speaks no prompt
// holds no goroutine and no timer for it.
type Pacer struct {
	clock  clock.Clock
	period time.Duration // how often a stagnant run queue is looked at
	max    int           // workers started while the run queue moves

	mu      sync.Mutex
	parked  parkHeap
	runq    []Writer
	workers []*paceWorker // running
	timer   clock.Timer   // armed for timerAt; nil: none
	timerAt time.Time
	tgen    uint64 // the armed timer's; a callback of another was stopped

	extra atomic.Int64 // workers started beyond max, beside stalled ones
	ticks atomic.Int64 // timer callbacks run
}

// Writer is a call's writer as the pacer sees it (an outbound.Queue):
// parked with an epoch, resumed on a worker.
type Writer interface {
	// Unpark reports whether the writer is still parked as epoch, and
	// if so takes it out of its park: the pacer then resumes it.
	Unpark(epoch uint64) bool
	// Resume runs the writer again, on the calling worker.
	Resume()
}

// New returns a pacer on clock that looks at a stagnant run queue every
// period (a frame's duration).
func New(clock clock.Clock, period time.Duration) *Pacer {
	return &Pacer{clock: clock, period: period, max: max(runtime.GOMAXPROCS(0), 2)}
}

// paceWorker is one running worker: since is when it took the writer
// it runs (UnixNano on the engine's clock; 0: between writers). A worker
// on one writer for a period or more is held by a stalled write.
type paceWorker struct{ since atomic.Int64 }

// parkEntry is a parked writer's place in the heap: o parked as epoch, to
// be resumed at at.
type parkEntry struct {
	at    time.Time
	o     Writer
	epoch uint64
}

type parkHeap []parkEntry

func (h parkHeap) Len() int           { return len(h) }
func (h parkHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h parkHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *parkHeap) Push(x any)        { *h = append(*h, x.(parkEntry)) }
func (h *parkHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = parkEntry{}
	*h = old[:len(old)-1]
	return e
}

// Park schedules o, parked as epoch, to resume at at.
func (p *Pacer) Park(o Writer, epoch uint64, at time.Time) {
	p.mu.Lock()
	heap.Push(&p.parked, parkEntry{at: at, o: o, epoch: epoch})
	p.armLocked(at)
	p.mu.Unlock()
}

// Run resumes o now (it was unparked by a kick).
func (p *Pacer) Run(o Writer) {
	p.mu.Lock()
	p.runq = append(p.runq, o)
	start := p.startLocked(p.clock.Now())
	p.mu.Unlock()
	start()
}

// pacerGrain is the grid the pacer's timer fires on: writers due within
// one grain share a tick, so that calls that began their prompts at
// different moments do not each cost a tick per frame. A frame leaves at
// most a grain after its due time, well inside the pacing lead
// (session.Config.PaceLead) the caller has buffered.
const pacerGrain = 5 * time.Millisecond

// armLocked makes sure the timer fires by at, rounded up to pacerGrain.
func (p *Pacer) armLocked(at time.Time) {
	if r := at.UnixNano() % int64(pacerGrain); r != 0 {
		at = at.Add(pacerGrain - time.Duration(r))
	}
	if p.timer != nil && !at.Before(p.timerAt) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.tgen++
	gen := p.tgen
	p.timerAt = at
	tick := func() { p.tick(gen) }
	for {
		// As clock.AfterFuncAt, but a time already passed ticks at once
		// on any clock (a manual clock runs a timer of 0 only when it is
		// next advanced), and a clock that moved while the timer was
		// armed has it armed again from a new reading.
		now := p.clock.Now()
		if !at.After(now) {
			p.timer = passedTimer{}
			go tick()
			return
		}
		t := p.clock.AfterFunc(at.Sub(now), tick)
		if p.clock.Now().Sub(now) < time.Millisecond || !t.Stop() {
			p.timer = t
			return
		}
	}
}

// passedTimer stands for a tick started at once: there is nothing to stop.
type passedTimer struct{}

func (passedTimer) Stop() bool { return false }

// tick moves the writers now due to the run queue and starts workers for
// them; it runs on the clock's timer goroutine and never writes itself.
func (p *Pacer) tick(gen uint64) {
	p.ticks.Add(1)
	now := p.clock.Now()
	var due []parkEntry
	p.mu.Lock()
	if gen == p.tgen {
		p.timer = nil
	}
	for len(p.parked) > 0 && !p.parked[0].at.After(now) {
		due = append(due, heap.Pop(&p.parked).(parkEntry))
	}
	p.mu.Unlock()

	var ready []Writer
	for _, e := range due {
		if e.o.Unpark(e.epoch) {
			ready = append(ready, e.o)
		}
	}
	p.mu.Lock()
	p.runq = append(p.runq, ready...)
	start := p.startLocked(now)
	if len(p.runq) > 0 {
		p.armLocked(now.Add(p.period)) // to see whether the run queue moves
	}
	if len(p.parked) > 0 {
		p.armLocked(p.parked[0].at)
	}
	p.mu.Unlock()
	start()
}

// startLocked starts workers for the run queue: up to p.max of them not
// held by a stalled write (on one writer since a period before now).
func (p *Pacer) startLocked(now time.Time) func() {
	free := len(p.workers)
	for _, w := range p.workers {
		if t := w.since.Load(); t != 0 && now.UnixNano()-t >= int64(p.period) {
			free--
		}
	}
	n := min(len(p.runq), p.max) - free
	if n <= 0 {
		if len(p.runq) > 0 && p.timer == nil {
			p.armLocked(now.Add(p.period)) // to see whether the run queue moves
		}
		return func() {}
	}
	if free < len(p.workers) {
		p.extra.Add(int64(n)) // beside workers held by stalled writes
	}
	ws := make([]*paceWorker, n)
	for i := range ws {
		ws[i] = new(paceWorker)
	}
	p.workers = append(p.workers, ws...)
	return func() {
		for _, w := range ws {
			go p.work(w)
		}
	}
}

// work resumes writers from the run queue until it is empty.
func (p *Pacer) work(w *paceWorker) {
	for {
		p.mu.Lock()
		if len(p.runq) == 0 {
			i := slices.Index(p.workers, w)
			p.workers = slices.Delete(p.workers, i, i+1)
			p.runq = nil
			p.mu.Unlock()
			return
		}
		o := p.runq[0]
		p.runq[0] = nil
		p.runq = p.runq[1:]
		p.mu.Unlock()
		w.since.Store(p.clock.Now().UnixNano())
		o.Resume()
		w.since.Store(0)
	}
}

// SetMaxWorkers sets the workers started while the run queue moves (tests:
// one worker, to show a stalled write does not hold the others).
func (p *Pacer) SetMaxWorkers(n int) {
	p.mu.Lock()
	p.max = n
	p.mu.Unlock()
}

// Extra reports the workers started beyond the maximum, beside workers
// held by stalled writes (tests).
func (p *Pacer) Extra() int64 { return p.extra.Load() }

// Pending reports the writers parked (live or not) and queued to run, for
// tests.
func (p *Pacer) Pending() (parked, queued, workers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked), len(p.runq), len(p.workers)
}
