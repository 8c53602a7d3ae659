package trace

import (
	"math"
	"slices"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Outcomes are a stage's results over a trace: what happened to the work
// offered, and how long admitted work waited.
type Outcomes struct {
	Offered   int           `json:"offered"`  // offers that did not fail (an offer refused is offered)
	Admitted  int           `json:"admitted"` // took a lease
	Refused   RefusedCounts `json:"refused"`  // turned away at the offer, by disposition
	Expired   int           `json:"expired"`  // left the queue too old
	Cancelled int           `json:"cancelled"`
	Completed int           `json:"completed"` // released after completing
	// Queued and Held are the work still waiting and still holding a
	// lease when the trace ends.
	Queued      int     `json:"queued_at_end"`
	Held        int     `json:"held_at_end"`
	PeakLeased  int     `json:"peak_leased"`
	PeakWaiting int     `json:"peak_waiting"`
	WaitP50     Seconds `json:"wait_p50"` // offer to admission, over admitted work
	WaitP99     Seconds `json:"wait_p99"`
	Errors      int     `json:"errors"` // operations that returned an error
}

// RefusedCounts count refused offers by disposition.
type RefusedCounts struct {
	Overloaded int `json:"overloaded,omitempty"`
	Expired    int `json:"expired,omitempty"`
	Stale      int `json:"stale,omitempty"`
	OutOfOrder int `json:"out_of_order,omitempty"`
	Closed     int `json:"closed,omitempty"`
}

// Total is the number of refused offers.
func (r RefusedCounts) Total() int {
	return r.Overloaded + r.Expired + r.Stale + r.OutOfOrder + r.Closed
}

// Of returns the count of refusal d.
func (r RefusedCounts) Of(d stages.Disposition) int {
	switch d {
	case stages.Overloaded:
		return r.Overloaded
	case stages.Expired:
		return r.Expired
	case stages.Stale:
		return r.Stale
	case stages.OutOfOrder:
		return r.OutOfOrder
	case stages.Closed:
		return r.Closed
	}
	return 0
}

func (r *RefusedCounts) add(d stages.Disposition) {
	switch d {
	case stages.Overloaded:
		r.Overloaded++
	case stages.Expired:
		r.Expired++
	case stages.Stale:
		r.Stale++
	case stages.OutOfOrder:
		r.OutOfOrder++
	case stages.Closed:
		r.Closed++
	}
}

// Refusals lists the refusal dispositions in the order reports show them.
var Refusals = []stages.Disposition{stages.Overloaded, stages.Expired, stages.Stale, stages.OutOfOrder, stages.Closed}

// JobOutcome is what happened to one offered job.
type JobOutcome struct {
	// Outcome is the refusal (overloaded, expired, stale, out-of-order,
	// closed), the end of retained work (expired, cancelled, completed),
	// its state when the trace ends (queued, active, or cancelled while
	// its lease awaits release), or error for an offer that failed.
	Outcome string `json:"outcome"`
	// Refused says the offer was turned away (Outcome is its refusal).
	Refused  bool  `json:"refused,omitempty"`
	Offered  *Time `json:"offered,omitempty"`
	Admitted *Time `json:"admitted,omitempty"`
	Ended    *Time `json:"ended,omitempty"`
}

// Wait is how long the job waited for its lease (false if not admitted).
func (o JobOutcome) Wait() (time.Duration, bool) {
	if o.Admitted == nil || o.Offered == nil {
		return 0, false
	}
	return o.Admitted.Sub(o.Offered.Time), true
}

// same reports whether two outcomes are equal, times included.
func (o JobOutcome) same(p JobOutcome) bool {
	eq := func(a, b *Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(b.Time)) }
	return o.Outcome == p.Outcome && eq(o.Offered, p.Offered) && eq(o.Admitted, p.Admitted) && eq(o.Ended, p.Ended)
}

// JobChange is a job whose outcome under the replay's limits differs from
// the recorded one (its outcome, or when it was admitted or ended).
type JobChange struct {
	Stage    string     `json:"stage"`
	Job      string     `json:"job"`
	Recorded JobOutcome `json:"recorded"`
	Replayed JobOutcome `json:"replayed"`
}

type jobState uint8

const (
	jobRefused jobState = iota + 1 // or failed
	jobQueued
	jobLeased
	jobDone
)

// key names one offer of an identity: an identity may be offered again
// once its tombstone is evicted.
type key struct {
	id string
	n  int
}

type job struct {
	key      key
	owner    string
	born     time.Time
	offered  time.Time
	state    jobState
	outcome  string
	admitted time.Time
	ended    time.Time
	// cancelled is when active work was cancelled (zero if it was not).
	cancelled time.Time
	returned  bool // ReleaseOnCancel gave the lease back at the cancel
}

func (j *job) result() JobOutcome {
	o := JobOutcome{Outcome: j.outcome}
	if !j.offered.IsZero() {
		o.Offered = at(j.offered)
	}
	if !j.admitted.IsZero() {
		o.Admitted = at(j.admitted)
	}
	if !j.ended.IsZero() {
		o.Ended = at(j.ended)
	}
	switch j.state {
	case jobRefused:
		o.Refused = o.Outcome != "error"
	case jobQueued:
		o.Outcome = "queued"
	case jobLeased:
		o.Outcome = "active"
		if !j.cancelled.IsZero() {
			o.Outcome = "cancelled"
		}
	}
	return o
}

// tracker follows the jobs of one stage from the operations and their
// outcomes, as the Controller's contract defines them: the same tracker
// reads the recorded outcomes and the replay's.
type tracker struct {
	policy  stages.Policy
	jobs    []*job
	current map[string]*job // the latest offer of each identity
	offers  map[string]int
	live    map[string][]*job // owner -> queued and leased jobs
	queue   []*job            // queued jobs in offer order; left ones skipped at the head
	head    int
	queued  int
	leased  int
	out     Outcomes
	waits   []time.Duration
	fresh   []*job // jobs the last operation cancelled while active
}

func newTracker(p stages.Policy) *tracker {
	return &tracker{policy: p, current: map[string]*job{}, offers: map[string]int{}, live: map[string][]*job{}}
}

func (t *tracker) peaks() {
	t.out.PeakLeased = max(t.out.PeakLeased, t.leased)
	t.out.PeakWaiting = max(t.out.PeakWaiting, t.queued)
}

func (t *tracker) offer(id, owner string, born, now time.Time, d stages.Disposition, failed bool) *job {
	t.offers[id]++
	j := &job{key: key{id, t.offers[id]}, owner: owner, born: born, offered: now}
	t.jobs = append(t.jobs, j)
	switch {
	case failed:
		t.out.Errors++
		j.state, j.outcome, j.offered = jobRefused, "error", time.Time{}
		if t.current[id] == nil {
			t.current[id] = j
		}
		return j
	case d == stages.Queued:
		t.out.Offered++
		j.state = jobQueued
		t.current[id] = j
		t.live[owner] = append(t.live[owner], j)
		t.queue = append(t.queue, j)
		t.queued++
		t.peaks()
	default:
		t.out.Offered++
		t.out.Refused.add(d)
		j.state, j.outcome = jobRefused, d.String()
		t.current[id] = j
	}
	return j
}

// leave takes j out of its owner's live work.
func (t *tracker) leave(j *job) {
	l := t.live[j.owner]
	for i, v := range l {
		if v == j {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(t.live, j.owner)
	} else {
		t.live[j.owner] = l
	}
}

func (t *tracker) take(now time.Time, d stages.Disposition, id string, failed bool) {
	if failed {
		t.out.Errors++
		return
	}
	j := t.current[id]
	if j == nil || j.state != jobQueued || (d != stages.Admitted && d != stages.Expired) {
		return
	}
	t.queued--
	if d == stages.Admitted {
		j.state, j.admitted = jobLeased, now
		t.leased++
		t.out.Admitted++
		t.waits = append(t.waits, now.Sub(j.offered))
	} else {
		j.state, j.outcome, j.ended = jobDone, "expired", now
		t.out.Expired++
		t.leave(j)
	}
	t.peaks()
}

func (t *tracker) release(id string, now time.Time, d stages.Disposition, failed bool) {
	if failed {
		t.out.Errors++
		return
	}
	j := t.current[id]
	if j == nil || j.state != jobLeased {
		return
	}
	if !j.returned {
		t.leased--
	}
	j.state, j.outcome, j.ended = jobDone, d.String(), now
	if d == stages.Completed {
		t.out.Completed++
	}
	t.leave(j)
}

// cancelJob cancels j as Rotate, Forget and Cancel do: queued work leaves
// the queue, active work keeps its lease (cancelled) until release.
func (t *tracker) cancelJob(j *job, now time.Time) {
	switch j.state {
	case jobQueued:
		t.queued--
		j.state, j.outcome, j.ended = jobDone, "cancelled", now
		t.out.Cancelled++
		t.leave(j)
	case jobLeased:
		if !j.cancelled.IsZero() {
			return
		}
		j.cancelled = now
		t.out.Cancelled++
		if t.policy == admit.ReleaseOnCancel {
			j.returned = true
			t.leased--
		}
		t.fresh = append(t.fresh, j)
	}
}

func (t *tracker) cancelOwner(owner string, now time.Time) {
	for _, j := range slices.Clone(t.live[owner]) {
		t.cancelJob(j, now)
	}
}

func (t *tracker) rotate(owner string, now time.Time, failed bool) {
	t.fresh = t.fresh[:0]
	if failed {
		t.out.Errors++
		return
	}
	t.cancelOwner(owner, now)
}

func (t *tracker) forget(owner string, now time.Time) {
	t.fresh = t.fresh[:0]
	t.cancelOwner(owner, now)
}

func (t *tracker) cancel(id string, now time.Time, failed bool) {
	t.fresh = t.fresh[:0]
	if failed {
		t.out.Errors++
		return
	}
	if j := t.current[id]; j != nil {
		t.cancelJob(j, now)
	}
}

// first returns the head of the queue: the oldest offer still queued.
func (t *tracker) first() *job {
	for t.head < len(t.queue) && t.queue[t.head].state != jobQueued {
		t.head++
	}
	if t.head > 1024 && t.head > len(t.queue)/2 {
		t.queue = append(t.queue[:0], t.queue[t.head:]...)
		t.head = 0
	}
	if t.head < len(t.queue) {
		return t.queue[t.head]
	}
	return nil
}

// observe follows one operation as written, with the outcome r it had.
func (t *tracker) observe(op Op, r Result) {
	failed := r.Error != ""
	now := op.At.Time
	switch op.Op {
	case "offer":
		t.offer(op.ID, op.Owner, op.Born.Time, now, r.Disposition, failed)
	case "take":
		t.take(now, r.Disposition, r.ID, failed)
	case "release":
		t.release(op.ID, now, r.Disposition, failed)
	case "cancel":
		t.cancel(op.ID, now, failed)
	case "rotate":
		t.rotate(op.Owner, now, failed)
	case "forget":
		t.forget(op.Owner, now)
	}
}

// outcomes returns the stage's outcomes so far.
func (t *tracker) outcomes() Outcomes {
	o := t.out
	o.Queued, o.Held = t.queued, t.leased
	if len(t.waits) > 0 {
		w := slices.Clone(t.waits)
		slices.Sort(w)
		o.WaitP50, o.WaitP99 = Seconds(quantile(w, 0.50)), Seconds(quantile(w, 0.99))
	}
	return o
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q * float64(len(sorted))))
	if i < 1 {
		i = 1
	}
	if i > len(sorted) {
		i = len(sorted)
	}
	return sorted[i-1]
}

// recordedResult is the outcome a recorded line carries.
func recordedResult(op Op) Result {
	r := Result{Op: op.Op, ID: op.ID, Owner: op.Owner, Stage: op.Stage, Error: op.Error}
	if op.Disposition != nil {
		r.Disposition = *op.Disposition
	}
	return r
}
