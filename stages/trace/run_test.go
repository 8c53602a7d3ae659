package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// workload drives Dispatchers the way the server does (calls that rotate
// in, submit work, hold leases for a while, barge in, cancel, hang up,
// drain) on a manual clock, with every stage recorded by one Writer.
type workload struct {
	t      *testing.T
	rng    *rand.Rand
	clock  *stagestest.Clock
	stages []*wstage
	// failed, when set, picks the releases made after a backend failed
	// (ReleaseFailed), without drawing from rng.
	failed func(n int) bool
	nrel   int
}

type wstage struct {
	name    string
	d       *admit.Dispatcher
	tickets map[string]*admit.Ticket
	held    map[string]time.Time // admitted work -> its release time
	owners  []*wowner
	n       int
}

type wowner struct {
	id     string
	gen    uint64
	born   time.Time
	active bool
	held   []string // ids admitted to this owner
}

func newWorkload(t *testing.T, seed uint64, w *Writer, limits map[string]stages.Limits, clock *stagestest.Clock, dclock clock.Clock) *workload {
	wl := &workload{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), clock: clock}
	names := make([]string, 0, len(limits))
	for n := range limits {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		l := limits[name]
		c, err := admit.New(l, w.Stage(name, l, admit.Frontdoor, true))
		if err != nil {
			t.Fatal(err)
		}
		st := &wstage{name: name, d: admit.NewDispatcher(c, dclock), tickets: map[string]*admit.Ticket{}, held: map[string]time.Time{}}
		for i := range 6 {
			st.owners = append(st.owners, &wowner{id: fmt.Sprint("call-", i)})
		}
		wl.stages = append(wl.stages, st)
	}
	return wl
}

func (wl *workload) dur(max time.Duration) time.Duration {
	return time.Duration(wl.rng.Int64N(int64(max) + 1))
}

// poll schedules the release of every ticket that was admitted.
func (wl *workload) poll(st *wstage) {
	now := wl.clock.Now()
	for _, id := range sortedKeys(st.tickets) {
		tk := st.tickets[id]
		select {
		case <-tk.Done():
		default:
			continue
		}
		delete(st.tickets, id)
		if d, _ := tk.Result(); d == stages.Admitted {
			if wl.rng.IntN(10) == 0 {
				continue // never released: the backend hangs
			}
			st.held[id] = now.Add(wl.dur(1500 * time.Millisecond))
			for _, o := range st.owners {
				if strings.HasPrefix(id, o.id+"/") {
					o.held = append(o.held, id)
				}
			}
		}
	}
}

func (wl *workload) step(st *wstage) {
	now := wl.clock.Now()
	o := st.owners[wl.rng.IntN(len(st.owners))]
	switch r := wl.rng.IntN(100); {
	case !o.active || r < 3: // a call starts (or a stray rotate to an old generation)
		if !o.active {
			o.active, o.gen, o.born = true, o.gen+1, time.Time{}
			_ = st.d.Rotate(o.id, o.gen)
		} else {
			_ = st.d.Rotate(o.id, o.gen) // ErrGeneration
		}
	case r < 55: // a turn
		born := now.Add(-wl.dur(500 * time.Millisecond))
		if wl.rng.IntN(8) == 0 && !o.born.IsZero() {
			born = o.born.Add(-time.Millisecond) // out of order
		}
		if born.After(o.born) {
			o.born = born
		}
		st.n++
		id := fmt.Sprintf("%s/t%d", o.id, st.n)
		gen := o.gen
		if wl.rng.IntN(15) == 0 {
			gen-- // stale
		}
		tk, _, _ := st.d.Submit(stages.Job{ID: id, Owner: o.id, Generation: gen, Born: born, Tenant: []string{"", "acme", "beta"}[wl.rng.IntN(3)]})
		if tk != nil {
			st.tickets[id] = tk
		}
	case r < 65: // barge-in: running work gets its cleanup time
		o.gen++
		o.born = time.Time{}
		_ = st.d.Rotate(o.id, o.gen)
		for _, id := range o.held {
			if at, ok := st.held[id]; ok && wl.rng.IntN(4) != 0 {
				if c := now.Add(wl.dur(200 * time.Millisecond)); c.Before(at) {
					st.held[id] = c
				}
			}
		}
	case r < 72: // a queued ticket withdrawn
		if ids := sortedKeys(st.tickets); len(ids) > 0 {
			_, _ = st.d.Cancel(ids[wl.rng.IntN(len(ids))])
		}
	case r < 78: // hang-up
		st.d.Forget(o.id)
		o.active = false
	case r < 80: // a release with no lease
		_, _ = st.d.Release("nobody")
	case r < 81:
		st.d.Close()
	case r < 83:
		st.d.Reopen()
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// run plays steps on every stage, releasing held work at its time.
func (wl *workload) run(steps int) {
	for range steps {
		for _, st := range wl.stages {
			for range wl.rng.IntN(3) {
				wl.step(st)
				wl.poll(st)
			}
		}
		wl.clock.Advance(wl.dur(150 * time.Millisecond))
		now := wl.clock.Now()
		for _, st := range wl.stages {
			wl.poll(st)
			var due []string
			for _, id := range sortedKeys(st.held) {
				if !st.held[id].After(now) {
					due = append(due, id)
				}
			}
			for _, id := range due {
				delete(st.held, id)
				wl.nrel++
				if wl.failed != nil && wl.failed(wl.nrel) {
					_, _ = st.d.ReleaseFailed(id)
				} else {
					_, _ = st.d.Release(id)
				}
				wl.poll(st)
			}
		}
	}
	for _, st := range wl.stages {
		st.d.Stop()
		st.d.Forget("call-0") // after Stop: work still moves, the timer does not
	}
}

// lateClock is a manual clock whose timers fire up to 3 ms late, as a
// system clock's do under load.
type lateClock struct {
	*stagestest.Clock
	rng *rand.Rand
}

func (c lateClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.Clock.AfterFunc(d+time.Duration(c.rng.Int64N(int64(3*time.Millisecond))), f)
}

// recordWorkload records one workload and returns the trace.
func recordWorkload(t *testing.T, seed uint64, limits map[string]stages.Limits, steps int) []byte {
	return recordWorkloadOn(t, seed, limits, steps, false)
}

func recordWorkloadOn(t *testing.T, seed uint64, limits map[string]stages.Limits, steps int, late bool) []byte {
	t.Helper()
	return recordWorkloadWith(t, seed, limits, steps, late, nil)
}

func recordWorkloadWith(t *testing.T, seed uint64, limits map[string]stages.Limits, steps int, late bool, failed func(n int) bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	clk := stagestest.NewClock(t0)
	w, err := NewWriter(&buf, WriterOptions{Origin: t0, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var dclock clock.Clock = clk
	if late {
		dclock = lateClock{clk, rand.New(rand.NewPCG(seed, 1))}
	}
	wl := newWorkload(t, seed, w, limits, clk, dclock)
	wl.failed = failed
	wl.run(steps)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Dropped != 0 || s.Ended != "closed" {
		t.Fatalf("writer %+v", s)
	}
	return buf.Bytes()
}

var twoStages = map[string]stages.Limits{
	"model":   {Slots: 2, Waiting: 3, MaxAge: 700 * time.Millisecond, TenantWaiting: 2},
	"session": {Slots: 3, Waiting: 2, MaxAge: 400 * time.Millisecond, Tombstones: 8},
}

// TestRunSameLimitsIsExact: a recorded trace replayed under its recorded
// limits changes no job's outcome, admission time or end, over many random
// workloads with calls, turns, barge-ins, cancels, hang-ups, expiry, drains
// and backends that never return.
func TestRunSameLimitsIsExact(t *testing.T) {
	seen := make([]int, 11) // every kind of outcome occurs in some workload
	defer func() {
		if slices.Contains(seen, 0) {
			t.Errorf("the workloads miss an outcome: %v", seen)
		}
	}()
	for seed := range uint64(60) {
		// Half the dispatchers' timers fire late, as real ones do.
		tr := recordWorkloadOn(t, seed, twoStages, 120, seed%2 == 1)
		rep, err := Run(bytes.NewReader(tr), Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(rep.Stages) != 2 || rep.End == nil || rep.End.Reason != "closed" {
			t.Fatalf("seed %d: %d stages, end %+v", seed, len(rep.Stages), rep.End)
		}
		for _, s := range rep.Stages {
			if !s.Recorded || !s.Dispatched || s.Before == nil {
				t.Fatalf("seed %d stage %s: not read as recorded", seed, s.Name)
			}
			if len(s.Changes) != 0 {
				t.Errorf("seed %d stage %s: %d jobs changed under the recorded limits, first %+v", seed, s.Name, len(s.Changes), s.Changes[0])
			}
			if *s.Before != s.After {
				t.Errorf("seed %d stage %s: outcomes\nrecorded %+v\nreplayed %+v", seed, s.Name, *s.Before, s.After)
			}
			b := s.Before
			for i, n := range []int{b.Admitted, b.Completed, b.Expired, b.Cancelled, b.Held, b.Refused.Overloaded,
				b.Refused.Expired, b.Refused.Stale, b.Refused.OutOfOrder, b.Refused.Closed, b.Errors} {
				seen[i] += n
			}
			if err := s.Final.Ledger.Check(s.Final.Queued, s.Final.Leased); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestRunFailedReleasesExact: work released after its backend failed
// (ReleaseFailed, counted failed in the ledger) replays as failed under
// the recorded limits: no job changes, and the replay's ledger counts the
// same failures.
func TestRunFailedReleasesExact(t *testing.T) {
	for seed := range uint64(12) {
		tr := recordWorkloadWith(t, seed, twoStages, 120, seed%2 == 1, func(n int) bool { return n%3 == 0 })
		if !bytes.Contains(tr, []byte(`"disposition":"failed"`)) {
			t.Fatalf("seed %d: the trace records no failed release", seed)
		}
		rep, err := Run(bytes.NewReader(tr), Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		failed := uint64(0)
		for _, s := range rep.Stages {
			if len(s.Changes) != 0 {
				t.Errorf("seed %d stage %s: %d jobs changed, first %+v", seed, s.Name, len(s.Changes), s.Changes[0])
			}
			if *s.Before != s.After {
				t.Errorf("seed %d stage %s: outcomes\nrecorded %+v\nreplayed %+v", seed, s.Name, *s.Before, s.After)
			}
			if err := s.Final.Ledger.Check(s.Final.Queued, s.Final.Leased); err != nil {
				t.Error(err)
			}
			failed += s.Final.Ledger.Failed
		}
		if failed == 0 {
			t.Errorf("seed %d: the replay counted no failed release", seed)
		}
	}
}

// TestRunTrackerMatchesLedger: the outcomes Run counts agree with the
// replaying controller's own ledger.
func TestRunTrackerMatchesLedger(t *testing.T) {
	for seed := range uint64(10) {
		tr := recordWorkload(t, seed, twoStages, 80)
		rep, err := Run(bytes.NewReader(tr), Options{Limits: func(string, stages.Limits, bool) stages.Limits {
			return stages.Limits{Slots: 1, Waiting: 2, MaxAge: 300 * time.Millisecond}
		}})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rep.Stages {
			l, o := s.Final.Ledger, s.After
			got := []uint64{uint64(o.Offered), uint64(o.Admitted), uint64(o.Expired), uint64(o.Completed), uint64(o.Cancelled),
				uint64(o.Refused.Total()), uint64(o.Queued), uint64(o.Held)}
			want := []uint64{l.Offered, l.Admitted, l.Expired, l.Completed, l.Cancelled(), l.Refused.Total(), uint64(s.Final.Queued), uint64(s.Final.Leased)}
			if !slices.Equal(got, want) {
				t.Errorf("seed %d stage %s: tracker %v, ledger %v", seed, s.Name, got, want)
			}
			if o.PeakLeased > 1 || o.PeakWaiting > 2 {
				t.Errorf("seed %d stage %s: limits broken in the replay: %+v", seed, s.Name, o)
			}
		}
	}
}

// TestRunSmallerLimitsRefuseMore: the same traffic under smaller limits is
// refused more, and the difference is reported job by job.
func TestRunSmallerLimitsRefuseMore(t *testing.T) {
	tr := recordWorkload(t, 7, map[string]stages.Limits{"model": {Slots: 4, Waiting: 8, MaxAge: 2 * time.Second}}, 150)
	rep, err := Run(bytes.NewReader(tr), Options{Limits: func(_ string, l stages.Limits, _ bool) stages.Limits {
		l.Slots, l.Waiting = 1, 1
		return l
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Stages[0]
	if s.After.Refused.Overloaded <= s.Before.Refused.Overloaded || s.After.Admitted >= s.Before.Admitted {
		t.Fatalf("recorded %+v\nreplayed %+v", *s.Before, s.After)
	}
	if len(s.Changes) == 0 {
		t.Fatal("no job changes reported")
	}
	if s.Hold <= 0 {
		t.Errorf("hold for work the recording never admitted: %v", s.Hold)
	}
	more := 0
	for _, c := range s.Changes {
		if c.Replayed.Outcome == "overloaded" && c.Recorded.Outcome != "overloaded" {
			more++
		}
	}
	if more == 0 {
		t.Errorf("no job newly overloaded among %d changes", len(s.Changes))
	}
	// Larger limits admit work the recording refused, and hold it for
	// Options.Hold.
	small := recordWorkload(t, 7, map[string]stages.Limits{"model": {Slots: 1, Waiting: 1, MaxAge: 2 * time.Second}}, 150)
	rep, err = Run(bytes.NewReader(small), Options{Limits: func(_ string, l stages.Limits, _ bool) stages.Limits {
		l.Slots, l.Waiting = 8, 16
		return l
	}, Hold: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s = rep.Stages[0]
	if s.After.Refused.Overloaded >= s.Before.Refused.Overloaded || s.After.Admitted <= s.Before.Admitted || s.Hold != 50*time.Millisecond {
		t.Fatalf("recorded %+v\nreplayed %+v hold %v", *s.Before, s.After, s.Hold)
	}
}

// TestRunResultsJSON: -json's lines are results, then each stage's changes
// and its summary, every line valid JSON naming its stage.
func TestRunResultsJSON(t *testing.T) {
	tr := recordWorkload(t, 3, twoStages, 80)
	var out bytes.Buffer
	_, err := Run(bytes.NewReader(tr), Options{Results: &out, Limits: func(_ string, l stages.Limits, _ bool) stages.Limits {
		l.Slots, l.Waiting = 1, 1
		return l
	}})
	if err != nil {
		t.Fatal(err)
	}
	sums, changes := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if m["stage"] != "model" && m["stage"] != "session" {
			t.Fatalf("line without its stage: %s", line)
		}
		switch {
		case m["final"] != nil:
			sums++
			if m["recorded"] == nil || m["replayed"] == nil {
				t.Errorf("summary without outcomes: %s", line)
			}
		case m["job"] != nil:
			changes++
		case m["op"] == nil || m["at"] == nil:
			t.Errorf("result without op or time: %s", line)
		}
	}
	if sums != 2 || changes == 0 {
		t.Errorf("%d summaries, %d changes", sums, changes)
	}
}

// TestRunHandWritten: a trace without recorded outcomes runs as written,
// as Replay does, and has nothing to compare.
func TestRunHandWritten(t *testing.T) {
	in, err := os.ReadFile("testdata/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := Run(bytes.NewReader(in), Options{Results: &out, Limits: func(_ string, l stages.Limits, ok bool) stages.Limits {
		if ok {
			t.Error("a hand-written trace has no recorded limits")
		}
		return stages.Limits{Slots: 1, Waiting: 2, MaxAge: 2 * time.Second, Tombstones: 64}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/reference.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("Run's results differ from Replay's golden:\n%s", out.String())
	}
	s := rep.Stages[0]
	if s.Recorded || s.Before != nil || s.Changes != nil || s.After.Offered != 9 || s.After.Refused.Total() != 5 {
		t.Errorf("%+v", s)
	}
}

// TestRunStageLineOnce: a stage's limits come once, before its operations.
func TestRunStageLineOnce(t *testing.T) {
	tr := `{"op":"stage","stage":"m","slots":1,"waiting":1,"max_age":1,"at":0}
{"stage":"m","op":"take","at":0,"disposition":"empty"}
{"op":"stage","stage":"m","slots":2,"waiting":1,"max_age":1,"at":0}
`
	if _, err := Run(strings.NewReader(tr), Options{}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v, want line 3", err)
	}
	if _, err := Run(strings.NewReader(`{"op":"stage","stage":"m","slots":0,"waiting":1,"max_age":1,"at":0}`), Options{}); err == nil || !strings.Contains(err.Error(), `stage "m"`) {
		t.Fatalf("err = %v, want the stage named", err)
	}
}

// TestRecordedTestdata keeps testdata/recorded.jsonl, a trace recorded from
// a deterministic workload (go test -run TestRecordedTestdata -update
// rewrites it), equal to what recording that workload writes today.
func TestRecordedTestdata(t *testing.T) {
	got := recordWorkload(t, 11, map[string]stages.Limits{
		"model":   {Slots: 2, Waiting: 2, MaxAge: 800 * time.Millisecond},
		"session": {Slots: 3, Waiting: 1, MaxAge: 500 * time.Millisecond},
	}, 30)
	const name = "testdata/recorded.jsonl"
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("recording the workload no longer writes %s (-update rewrites it)", name)
	}
}
