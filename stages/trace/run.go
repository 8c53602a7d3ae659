package trace

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// DefaultLimits are the limits of a stage whose trace does not give them
// (a hand-written trace) when Options.Limits does not either.
var DefaultLimits = stages.Limits{Slots: 4, Waiting: 16, MaxAge: 2 * time.Second}

// Options tune Run.
type Options struct {
	// Limits returns the limits to replay a stage under. recorded are the
	// limits of its "stage" line (ok is false for a trace without one:
	// recorded is then DefaultLimits). Nil keeps recorded.
	Limits func(stage string, recorded stages.Limits, ok bool) stages.Limits
	// Hold is how long work that the recording never admitted holds its
	// lease when the replay admits it. Zero: the median hold of the
	// stage's recorded completed work (none recorded: held to the end).
	Hold time.Duration
	// Results, when set, receives every Result, then each stage's
	// JobChanges and Summary, as JSON lines.
	Results io.Writer
	// Adaptive, when set and returning a config for a stage, replays that
	// stage under an adaptive slot limit (admit.Adaptive) fed with each
	// replayed lease's hold as its latency (adaptive.go).
	Adaptive func(stage string) *adaptive.Config
}

// Report is the outcome of Run.
type Report struct {
	Version     int       // of the "trace" line; 0 for a hand-written trace
	Started     time.Time // wall-clock time of "at" 0, from the "trace" line
	First, Last time.Time // the earliest and latest operation times
	Operations  int
	// End is the trace's "end" line; nil when the trace has none (written
	// by hand, or its recorder did not finish).
	End    *Op
	Stages []*StageReport // in order of first appearance
}

// StageReport is one stage's replay.
type StageReport struct {
	Name string
	// Recorded says the stage's operations carry their recorded outcomes
	// (a "stage" line); RecordedLimits and Policy are from that line.
	Recorded       bool
	RecordedLimits stages.Limits
	Policy         stages.Policy
	// Dispatched says the recording's takes were a Dispatcher's, so the
	// replay re-drives the stage as that dispatcher would (see Run).
	Dispatched bool
	Limits     stages.Limits // the replay's
	// Hold is the hold given to work the recording never admitted; zero
	// when it is held to the end of the trace.
	Hold time.Duration
	// Before are the recorded outcomes (nil without them); After the
	// replay's.
	Before  *Outcomes
	After   Outcomes
	Changes []JobChange
	// Adaptive is the replay's adaptive limit: its moves and where it
	// ended; nil for a fixed limit.
	Adaptive *AdaptiveReplay
	// Lost is how many of the stage's operations the recorder dropped
	// ("gap" lines): outcomes after the first gap are approximate.
	Lost       uint64
	Operations int // lines run (recorded operations, not counting added takes and releases)
	Errors     int
	Final      stages.Snapshot
}

type stageLines struct {
	name   string
	header *Op
	ops    []numbered
	lost   uint64
}

type numbered struct {
	n  int
	op Op
}

// Run replays a whole trace, each stage on a Controller of its own under
// the limits opt gives it, and compares the outcomes with the recorded ones
// when the trace has them. A line that does not parse stops it with an
// error naming the line.
//
// A stage without recorded outcomes, or not driven by a Dispatcher, is run
// as written: each operation is applied at its time, as Replay does.
//
// A dispatched stage with recorded outcomes (frontdoor serve -record-trace)
// is re-driven as its Dispatcher would have been, with the recorded
// operations as the workload:
//
//   - every offer, rotate, forget, close and reopen is run at its recorded
//     time, whatever happened upstream in the replay (each stage is replayed
//     on its own: a call refused in the replay still makes its turns);
//   - work is taken where the recording took it and, as the Dispatcher
//     does, right after any operation that would have woken it in the
//     replay (a queued offer, a release, a rotate, a cancel) and at the head
//     of the queue's deadline; the deadline fires as late as the
//     recording's latest expiry did after its own, and not after "stop";
//   - work admitted in the replay holds its lease for its recorded hold
//     (release minus admission) if it completed in the recording; work
//     cancelled while active is released its recorded cleanup time (release
//     minus cancel) after its cancel in the replay; work the recording
//     never admitted holds it for Options.Hold; work the recording admitted
//     and never released is held to the end. Work the recording completed
//     that the replay cancels while active is released after the stage's
//     median recorded cleanup time, or at its hold if none was recorded;
//   - a recorded release is run at its place when the replay's release of
//     that job falls at the same time, else the job is released at its own
//     time; a release or cancel of work the replay never retained (refused)
//     or no longer holds is not run; a release that failed in the
//     recording is not run.
//
// With the recorded limits this reproduces every recorded outcome exactly:
// no job changes.
func Run(r io.Reader, opt Options) (*Report, error) {
	rep := &Report{}
	byName := map[string]*stageLines{}
	var order []*stageLines
	get := func(name string) *stageLines {
		s := byName[name]
		if s == nil {
			s = &stageLines{name: name}
			byName[name] = s
			order = append(order, s)
		}
		return s
	}
	err := scan(r, func(n int, op Op) error {
		switch op.Op {
		case "trace":
			rep.Version = op.Version
			if op.Started != "" {
				if t, err := time.Parse(time.RFC3339Nano, op.Started); err == nil {
					rep.Started = t
				}
			}
			return nil
		case "end":
			e := op
			rep.End = &e
			return nil
		case "stage":
			s := get(op.Stage)
			if s.header != nil || len(s.ops) > 0 {
				return fmt.Errorf("line %d: %w: stage %q: its \"stage\" line must come once, before its operations", n, ErrSyntax, op.Stage)
			}
			h := op
			s.header = &h
			return nil
		case "gap":
			get(op.Stage).lost += op.Dropped
			return nil
		}
		rep.Operations++
		if rep.First.IsZero() || op.At.Before(rep.First) {
			rep.First = op.At.Time
		}
		if op.At.After(rep.Last) {
			rep.Last = op.At.Time
		}
		s := get(op.Stage)
		s.ops = append(s.ops, numbered{n, op})
		return nil
	})
	if err != nil {
		return nil, err
	}
	var enc *json.Encoder
	if opt.Results != nil {
		enc = json.NewEncoder(opt.Results)
	}
	for _, s := range order {
		sr, err := runStage(s, opt, enc)
		if err != nil {
			return nil, err
		}
		rep.Stages = append(rep.Stages, sr)
	}
	return rep, nil
}

func runStage(s *stageLines, opt Options, enc *json.Encoder) (*StageReport, error) {
	sr := &StageReport{Name: s.name, Lost: s.lost, RecordedLimits: DefaultLimits}
	if h := s.header; h != nil {
		sr.Recorded, sr.Dispatched, sr.RecordedLimits = true, h.Dispatched, h.Limits()
		if h.Policy != "" {
			sr.Policy, _ = admit.ParsePolicy(h.Policy) // checked by Parse
		}
	}
	sr.Limits = sr.RecordedLimits
	if opt.Limits != nil {
		sr.Limits = opt.Limits(s.name, sr.RecordedLimits, sr.Recorded)
	}
	c, err := admit.New(sr.Limits, stages.WithPolicy(sr.Policy))
	if err != nil {
		return nil, fmt.Errorf("stage %q: %w", s.name, err)
	}
	emit := func(r Result) error {
		if enc == nil {
			return nil
		}
		return enc.Encode(r)
	}
	var before *tracker
	if sr.Recorded {
		before = newTracker(sr.Policy)
		for _, l := range s.ops {
			before.observe(l.op, recordedResult(l.op))
		}
		o := before.outcomes()
		sr.Before = &o
	}
	after := newTracker(sr.Policy)
	var last time.Time
	for _, l := range s.ops {
		if l.op.At.After(last) {
			last = l.op.At.Time
		}
	}
	if sr.Recorded && sr.Dispatched {
		var stopAt time.Time
		for _, l := range s.ops {
			if l.op.Op == "stop" {
				stopAt = l.op.At.Time
				break
			}
		}
		d := newDriver(c, sr, before, after, stopAt, opt, emit)
		if opt.Adaptive != nil {
			if cfg := opt.Adaptive(s.name); cfg != nil {
				if d.adapt, err = newAdaptiveReplay(c, *cfg); err != nil {
					return nil, fmt.Errorf("stage %q: %w", s.name, err)
				}
				sr.Adaptive = d.adapt
			}
		}
		if err := d.run(s.ops, last); err != nil {
			return nil, err
		}
		sr.Hold = d.estHold
		if opt.Hold > 0 {
			sr.Hold = opt.Hold
		}
	} else {
		for _, l := range s.ops {
			if l.op.Op == "stop" {
				continue
			}
			res := Apply(c, l.op)
			res.Line = l.n
			after.observe(l.op, res)
			sr.Operations++
			if res.Error != "" {
				sr.Errors++
			}
			if err := emit(res); err != nil {
				return nil, err
			}
		}
	}
	sr.After = after.outcomes()
	sr.Final = c.Snapshot(last)
	if before != nil {
		sr.Changes = changes(s.name, before, after)
	}
	if enc != nil {
		for _, ch := range sr.Changes {
			if err := enc.Encode(ch); err != nil {
				return nil, err
			}
		}
		sum := Summary{Stage: s.name, Operations: sr.Operations, Errors: sr.Errors, Final: sr.Final, Recorded: sr.Before}
		if sr.Recorded {
			a := sr.After
			sum.Replayed = &a
		}
		if err := enc.Encode(sum); err != nil {
			return nil, err
		}
	}
	return sr, nil
}

// changes lists the jobs whose outcome differs, in the recording's order
// of offers.
func changes(stage string, before, after *tracker) []JobChange {
	got := make(map[key]*job, len(after.jobs))
	for _, j := range after.jobs {
		got[j.key] = j
	}
	var out []JobChange
	for _, b := range before.jobs {
		rb := b.result()
		var ra JobOutcome
		if a := got[b.key]; a != nil {
			ra = a.result()
			delete(got, b.key)
		} else {
			ra = JobOutcome{Outcome: "not offered"}
		}
		if !rb.same(ra) {
			out = append(out, JobChange{Stage: stage, Job: b.key.id, Recorded: rb, Replayed: ra})
		}
	}
	for _, a := range after.jobs { // offers the recording did not have: none in practice
		if got[a.key] != nil {
			out = append(out, JobChange{Stage: stage, Job: a.key.id, Recorded: JobOutcome{Outcome: "not offered"}, Replayed: a.result()})
		}
	}
	return out
}

// evidence is what the recording says about one job's use of its lease.
type evidence struct {
	hold    time.Duration // admission to release, for completed work
	cleanup time.Duration // cancel to release, for work cancelled while active
	holdOK  bool
	// failed: the recording released it after its backend failed
	// (admit.Controller.ReleaseFailed); the replay releases it so too.
	failed bool
	// cancelled: the recording cancelled it while active; unreleased: the
	// recording admitted it and never released it.
	cancelled, unreleased bool
}

// driver re-drives a dispatched stage (see Run).
type driver struct {
	c          *admit.Controller
	sr         *StageReport
	after      *tracker
	emit       func(Result) error
	ev         map[key]evidence
	estHold    time.Duration // for work the recording never admitted; 0: held to the end
	estCleanup time.Duration
	cleanupOK  bool
	lateness   time.Duration // how late the recording's expiry fired at worst
	maxAge     time.Duration // the replay's, as its policy enforces it
	finiteAge  bool
	stopped    bool
	woke       *job // a head the deadline's wake-up did not move
	now        time.Time
	releases   releaseHeap
	due        map[string]time.Time // id -> the replay's release time of work it leases
	adapt      *AdaptiveReplay      // nil for a fixed limit
	err        error
}

func newDriver(c *admit.Controller, sr *StageReport, before, after *tracker, stopAt time.Time, opt Options, emit func(Result) error) *driver {
	d := &driver{c: c, sr: sr, after: after, emit: emit, ev: map[key]evidence{}, due: map[string]time.Time{}}
	var holds, cleanups []time.Duration
	for _, j := range before.jobs {
		if j.admitted.IsZero() {
			continue
		}
		var e evidence
		switch {
		case !j.cancelled.IsZero():
			e.cancelled = true
			if j.state == jobDone {
				e.cleanup = j.ended.Sub(j.cancelled)
				cleanups = append(cleanups, e.cleanup)
			} else {
				e.unreleased = true
			}
		case j.state == jobDone:
			e.hold, e.holdOK = j.ended.Sub(j.admitted), true
			e.failed = j.outcome == stages.Failed.String()
			holds = append(holds, e.hold)
		default:
			e.unreleased = true
		}
		d.ev[j.key] = e
	}
	if opt.Hold > 0 {
		d.estHold = opt.Hold
	} else if len(holds) > 0 {
		slices.Sort(holds)
		d.estHold = max(quantile(holds, 0.5), 1) // a zero hold would look like "none"
	}
	if len(cleanups) > 0 {
		slices.Sort(cleanups)
		d.estCleanup, d.cleanupOK = quantile(cleanups, 0.5), true
	}
	d.maxAge, d.finiteAge = effectiveMaxAge(sr.Limits, sr.Policy)
	// The recording's dispatcher woke for each deadline a little late; the
	// replay's wakes as late as the latest of those (expiries after "stop"
	// were found by takes, not by the timer), so that with the recorded
	// limits the recording's own wake-up comes first.
	if recAge, ok := effectiveMaxAge(sr.RecordedLimits, sr.Policy); ok {
		for _, j := range before.jobs {
			if j.state != jobDone || j.outcome != "expired" || (!stopAt.IsZero() && j.ended.After(stopAt)) {
				continue
			}
			if l := j.ended.Sub(j.born.Add(recAge + time.Nanosecond)); l > d.lateness {
				d.lateness = l
			}
		}
	}
	return d
}

func effectiveMaxAge(l stages.Limits, p stages.Policy) (time.Duration, bool) {
	switch p {
	case admit.Unbounded, admit.Semaphore:
		return 0, false
	}
	return l.MaxAge, true
}

func (d *driver) out(r Result, t time.Time, note string) {
	if d.err != nil {
		return
	}
	r.Stage, r.At, r.Note = d.sr.Name, at(t), note
	d.err = d.emit(r)
}

func (d *driver) run(ops []numbered, last time.Time) error {
	for _, l := range ops {
		d.advance(l.op.At.Time, false)
		d.recorded(l)
		if d.err != nil {
			return d.err
		}
	}
	d.advance(last, true)
	return d.err
}

// advance runs the replay's own events (releases at their hold, the
// deadline's wake-up) that fall before t (at or before it when inclusive).
func (d *driver) advance(t time.Time, inclusive bool) {
	before := func(x time.Time) bool { return x.Before(t) || (inclusive && x.Equal(t)) }
	for d.err == nil {
		rel, id, okRel := d.nextRelease()
		alarm, okAlarm := d.alarm()
		switch {
		case okRel && before(rel) && (!okAlarm || !alarm.Before(rel)):
			d.release(id, rel, 0, "released at the end of its hold in the replay")
			d.pump(rel, 0, "taken after that release")
		case okAlarm && before(alarm):
			h := d.after.first()
			d.pump(alarm, 0, "taken at the head's deadline")
			if d.after.first() == h { // it did not expire (a trace beyond any real clock): wake for it no more
				d.woke = h
			}
		default:
			return
		}
	}
}

func (d *driver) nextRelease() (time.Time, string, bool) {
	for d.releases.Len() > 0 {
		top := d.releases[0]
		if at, ok := d.due[top.id]; ok && at.Equal(top.at) {
			return top.at, top.id, true
		}
		heap.Pop(&d.releases)
	}
	return time.Time{}, "", false
}

// alarm is when the replay's dispatcher would wake for the head's deadline.
func (d *driver) alarm() (time.Time, bool) {
	if d.stopped || !d.finiteAge {
		return time.Time{}, false
	}
	h := d.after.first()
	if h == nil || h == d.woke {
		return time.Time{}, false
	}
	a := h.born.Add(addSat(addSat(d.maxAge, time.Nanosecond), d.lateness))
	if a.Before(d.now) {
		a = d.now
	}
	return a, true
}

// addSat is a+b for non-negative durations, saturating.
func addSat(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

func (d *driver) setNow(t time.Time) {
	if t.After(d.now) {
		d.now = t
	}
}

// pump takes work at t until the stage is busy or empty, as the
// Dispatcher does.
func (d *driver) pump(t time.Time, line int, note string) {
	d.setNow(t)
	for d.err == nil {
		disp, id, err := d.c.Take(t)
		res := Result{Line: line, Op: "take", ID: id, Disposition: disp}
		if err != nil {
			res.Error = err.Error()
		}
		d.after.take(t, disp, id, err != nil)
		d.out(res, t, note)
		if disp == stages.Admitted {
			d.admitted(id, t)
		}
		if err != nil || (disp != stages.Admitted && disp != stages.Expired) {
			return
		}
	}
}

func (d *driver) schedule(id string, t time.Time) {
	d.due[id] = t
	heap.Push(&d.releases, release{at: t, id: id})
}

// admitted schedules the release of work the replay admitted at t.
func (d *driver) admitted(id string, t time.Time) {
	j := d.after.current[id]
	e, known := d.ev[j.key]
	switch {
	case known && e.holdOK:
		d.schedule(id, t.Add(e.hold))
	case known: // cancelled or never released in the recording: held until its cancel
	case d.estHold > 0:
		d.schedule(id, t.Add(d.estHold))
	}
}

// cancelledActive shortens the hold of work the last operation cancelled
// while it held its lease.
func (d *driver) cancelledActive(t time.Time) {
	for _, j := range d.after.fresh {
		e, known := d.ev[j.key]
		var at time.Time
		switch {
		case known && e.cancelled && e.unreleased:
			continue // the recording never saw its backend stop
		case known && e.cancelled:
			at = t.Add(e.cleanup)
		case d.cleanupOK:
			at = t.Add(d.estCleanup)
		default:
			continue
		}
		if cur, ok := d.due[j.key.id]; !ok || at.Before(cur) {
			d.schedule(j.key.id, at)
		}
	}
}

// release runs the replay's release of id at t.
func (d *driver) release(id string, t time.Time, line int, note string) {
	d.setNow(t)
	delete(d.due, id)
	release := d.c.Release
	if j := d.after.current[id]; j != nil && d.ev[j.key].failed {
		release = d.c.ReleaseFailed
	}
	if j := d.after.current[id]; j != nil && d.adapt != nil && !j.admitted.IsZero() {
		d.adapt.observe(t, t.Sub(j.admitted))
	}
	disp, err := release(id)
	res := Result{Line: line, Op: "release", ID: id, Disposition: disp}
	if err != nil {
		res.Error = err.Error()
	}
	d.after.release(id, t, disp, err != nil)
	d.out(res, t, note)
}

// recorded runs one recorded line.
func (d *driver) recorded(l numbered) {
	op, now := l.op, l.op.At.Time
	rec := recordedResult(op)
	recOK := rec.Error == ""
	d.sr.Operations++
	d.setNow(now)
	skip := func(note string) {
		d.out(Result{Line: l.n, Op: op.Op, ID: op.ID, Owner: op.Owner}, now, note)
	}
	var res Result
	pumps := false // the replay's dispatcher would take work now
	recPumps := false
	switch op.Op {
	case "offer":
		res = Apply(d.c, op)
		d.after.observe(op, res)
		pumps = res.Error == "" && res.Disposition == stages.Queued
		recPumps = recOK && rec.Disposition == stages.Queued
	case "take":
		d.pump(now, l.n, "")
		return
	case "release":
		j := d.after.current[op.ID]
		held := j != nil && j.state == jobLeased
		due, scheduled := d.due[op.ID]
		switch {
		case !recOK && held:
			skip("not run: it failed in the recording, and the replay holds this lease")
			return
		case !recOK: // it fails here as it did there
			res = Apply(d.c, op)
			d.after.observe(op, res)
		case !held:
			skip("not run: the replay does not hold this lease")
			return
		case !scheduled || due.After(now):
			skip("not run: the replay holds this lease longer")
			return
		default:
			d.release(op.ID, now, l.n, "")
			return // the recording's own takes follow it
		}
	case "cancel":
		j := d.after.current[op.ID]
		retained := j != nil && j.state != jobRefused
		if recOK != retained {
			if recOK {
				skip("not run: the replay refused this work")
			} else {
				skip("not run: it failed in the recording, and the replay retained this work")
			}
			return
		}
		res = Apply(d.c, op)
		d.after.observe(op, res)
		d.cancelledActive(now)
		pumps, recPumps = res.Error == "", recOK
	case "rotate", "forget":
		res = Apply(d.c, op)
		d.after.observe(op, res)
		d.cancelledActive(now)
		pumps, recPumps = res.Error == "", op.Op == "forget" || recOK
	case "close":
		res = Apply(d.c, op)
	case "reopen":
		res = Apply(d.c, op)
		pumps, recPumps = true, true
	case "limit":
		// The recording's limit moved: run under the recorded limits
		// the replay moves it too; under limits of its own (fixed, or
		// adaptive) the replay's limit is its own.
		if d.adapt != nil || d.sr.Limits.Slots != d.sr.RecordedLimits.Slots {
			skip("not run: the replay's slot limit is its own")
			return
		}
		res = Apply(d.c, op)
		pumps, recPumps = true, true
	case "stop":
		d.stopped = true
		d.out(Result{Line: l.n, Op: op.Op}, now, "")
		return
	}
	res.Line = l.n
	if res.Error != "" {
		d.sr.Errors++
	}
	d.out(res, now, "")
	if pumps && !recPumps {
		d.pump(now, l.n, "taken: the replay's dispatcher wakes here")
	}
}

type release struct {
	at time.Time
	id string
}

type releaseHeap []release

func (h releaseHeap) Len() int { return len(h) }
func (h releaseHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].id < h[j].id
}
func (h releaseHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *releaseHeap) Push(x any)   { *h = append(*h, x.(release)) }
func (h *releaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
