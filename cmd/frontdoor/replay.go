package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/adaptive"
	"github.com/frontdoorhq/frontdoor/stages/trace"
)

// replayStages are the server's stages, by the prefix of their serve
// flags (-synth-slots sets the synthesis stage).
var replayStages = []struct{ flag, stage string }{
	{"session", "session"}, {"recognize", "recognize"}, {"model", "model"}, {"synth", "synthesis"},
}

// limitFlags are the limit flags of replay for one stage, or for every
// stage; each is unset until given.
type limitFlags struct {
	slots, waiting, tombstones, share optInt
	maxAge                            optDuration
	order                             stages.Order
	orderSet                          bool
	auto                              *adaptive.Config
}

// apply puts the flags given into l.
func (f *limitFlags) apply(l stages.Limits) stages.Limits {
	if f.slots.set {
		l.Slots = f.slots.v
	}
	if f.waiting.set {
		l.Waiting = f.waiting.v
	}
	if f.maxAge.set {
		l.MaxAge = f.maxAge.v
	}
	if f.tombstones.set {
		l.Tombstones = f.tombstones.v
	}
	if f.share.set {
		l.TenantWaiting = f.share.v
	}
	if f.orderSet {
		l.Order = f.order
	}
	return l
}

// orderFlag is -order: it sets the order of every stage.
type orderFlag struct{ f *limitFlags }

func (o orderFlag) String() string {
	if o.f == nil || !o.f.orderSet {
		return ""
	}
	return o.f.order.String()
}

func (o orderFlag) Set(s string) error {
	o.f.orderSet = true
	return o.f.order.Set(s)
}

// autoFlag is -STAGE-auto MIN-MAX: the stage replays under an adaptive
// limit between those bounds, starting from its recorded (or given) slots.
type autoFlag struct{ f *limitFlags }

func (a autoFlag) String() string {
	if a.f == nil || a.f.auto == nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", a.f.auto.Min, a.f.auto.Max)
}

func (a autoFlag) Set(s string) error {
	los, his, ok := strings.Cut(s, "-")
	lo, e1 := strconv.Atoi(los)
	hi, e2 := strconv.Atoi(his)
	if !ok || e1 != nil || e2 != nil || lo < 1 || hi < lo {
		return fmt.Errorf("want MIN-MAX with 1 <= MIN <= MAX (2-32)")
	}
	a.f.auto = &adaptive.Config{Min: lo, Max: hi}
	return nil
}

const replayHead = `Usage: frontdoor replay [flags] TRACE.jsonl   (- reads standard input)

Runs a trace of stage operations through controllers with the limits given
here, to try a limit change against real traffic before making it, and
prints a table per stage: offered, admitted, refused by disposition,
expired, cancelled, completed, peak leased and waiting, and the wait for a
lease (p50, p99).

A trace recorded by frontdoor serve -record-trace holds every stage, its
limits and each operation's outcome. Without limit flags it replays under
the recorded limits, which reproduces every recorded outcome exactly; with
them it shows the difference ("model: 12 overloaded → 3 overloaded, 4 more
admitted, wait p99 1.2s → 1.9s"; -v lists each job that changed). Each
stage is re-driven as the server's dispatcher would drive it, with the
recorded offers as the workload: work the replay admits holds its lease for
its recorded hold (admission to release) when the recording completed it,
its recorded cleanup time after a cancel, -hold when the recording never
admitted it, and to the end when the recording never released it; a
recorded release of work the replay does not hold is dropped. Stages are
replayed one by one: a call the replay refuses still makes its recorded
turns. docs/REPLAY.md says more.

A hand-written trace (no recorded outcomes) runs each operation as written.
Limits come from -STAGE-* for that stage, then -slots, -waiting, -max-age
and -tombstones for every stage, then the trace, then 4 slots, 16 waiting
and 2s.
`

// runReplay runs a trace through controllers with the limits given on the
// command line: operators try a limit change against real traffic.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var all limitFlags
	fs.Var(&all.slots, "slots", "every stage's slots: `n` pieces of work hold a lease at once")
	fs.Var(&all.waiting, "waiting", "every stage's queue: `n` pieces of work wait for a lease")
	fs.Var(&all.maxAge, "max-age", "every stage's maximum wait: work older than this `duration` is not admitted")
	fs.Var(&all.tombstones, "tombstones", "every stage keeps `n` terminal records (0: the default)")
	fs.Var(orderFlag{&all}, "order", "every stage's `order`: fifo, or fair between tenants (serve -stage-order)")
	fs.Var(&all.share, "tenant-share", "every stage's share: one tenant holds at most `n` waiting places (0: none; serve -tenant-queue-share)")
	per := map[string]*limitFlags{}
	for _, st := range replayStages {
		f := &limitFlags{}
		per[st.stage] = f
		fs.Var(&f.slots, st.flag+"-slots", "the "+st.stage+" stage's slots: `n` hold a lease at once (serve -"+st.flag+"-slots)")
		fs.Var(&f.waiting, st.flag+"-queue", "the "+st.stage+" stage's queue: `n` wait for a lease (serve -"+st.flag+"-queue)")
		fs.Var(&f.maxAge, st.flag+"-max-wait", "the "+st.stage+" stage's maximum wait, a `duration` (serve -"+st.flag+"-max-wait)")
		if st.flag != "session" {
			fs.Var(autoFlag{f}, st.flag+"-auto", "replay the "+st.stage+" stage under an adaptive limit between `MIN-MAX`, fed with each lease's recorded hold (serve -"+st.flag+"-slots auto:MIN-MAX)")
		}
	}
	hold := fs.Duration("hold", 0, "how long work the recording never admitted holds its lease when the replay admits it (0: the stage's median recorded hold)")
	asJSON := fs.Bool("json", false, "print JSON lines instead of the table: each operation's result, each job that changed, and a summary per stage")
	verbose := fs.Bool("v", false, "list every job whose outcome changed")
	fs.String("config", "", "settings file (name = value lines)")
	fs.Usage = commandUsage(stderr, fs, replayHead)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("want exactly one trace file (frontdoor replay -h)")}
	}
	rules := []flagRule{{"slots", atLeastOne}, {"waiting", atLeastOne}, {"max-age", nonNegative}, {"tombstones", nonNegative}, {"hold", nonNegative}, {"tenant-share", nonNegative}}
	for _, st := range replayStages {
		rules = append(rules, stageRules(st.flag)...)
	}
	if err := checkFlags(fs, rules...); err != nil {
		return err
	}
	name := fs.Arg(0)
	in := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	opt := trace.Options{Hold: *hold, Adaptive: func(stage string) *adaptive.Config {
		if f := per[stage]; f != nil && f.auto != nil {
			c := *f.auto
			return &c
		}
		return nil
	}, Limits: func(stage string, l stages.Limits, _ bool) stages.Limits {
		l = all.apply(l)
		if f := per[stage]; f != nil {
			l = f.apply(l)
		}
		return l
	}}
	if *asJSON {
		opt.Results = stdout
	}
	rep, err := trace.Run(in, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !*asJSON {
		printReplay(stdout, name, rep, *verbose)
	}
	return nil
}

// printReplay writes the report as tables for people.
func printReplay(w io.Writer, name string, rep *trace.Report, verbose bool) {
	recorded := false
	for _, s := range rep.Stages {
		recorded = recorded || s.Recorded
	}
	head := fmt.Sprintf("%s: %d operations", name, rep.Operations)
	if len(rep.Stages) > 1 {
		head += fmt.Sprintf(" in %d stages", len(rep.Stages))
	}
	if rep.Operations > 0 {
		head += " over " + fmtDur(rep.Last.Sub(rep.First))
	}
	if !rep.Started.IsZero() {
		head += ", recorded from " + rep.Started.UTC().Format(time.RFC3339)
	}
	fmt.Fprintln(w, head+".")
	fmt.Fprintln(w)

	t := &table{right: map[int]bool{}}
	t.row("stage", "run", "slots", "queue", "max wait", "offered", "admitted", "expired", "cancelled", "completed",
		"peak leased", "peak waiting", "wait p50", "wait p99", "refused")
	for i := 2; i <= 13; i++ {
		t.right[i] = true
	}
	for _, s := range rep.Stages {
		label := s.Name
		if label == "" {
			label = "-"
		}
		if s.Before != nil {
			t.row(outcomeRow(label, "recorded", s.RecordedLimits, *s.Before)...)
			label = ""
		}
		row := outcomeRow(label, "replayed", s.Limits, s.After)
		if a := s.Adaptive; a != nil { // the slots column: bounds, then the range it moved in
			row[1] = "replayed auto"
			row[2] = fmt.Sprintf("%d-%d: %d..%d, %d moves", a.Config.Min, a.Config.Max, a.Min, a.Max, len(a.Moves))
		}
		if s.Limits.Order == stages.Fair {
			row[1] += " fair"
		}
		t.row(row...)
	}
	t.write(w)

	if !recorded {
		fmt.Fprintln(w, "\nThis trace has no recorded outcomes (written by hand, or by an older recorder): each operation ran as")
		fmt.Fprintln(w, "written, and there is nothing to compare.")
	} else {
		fmt.Fprintln(w)
		same := true
		for _, s := range rep.Stages {
			same = same && s.Limits == s.RecordedLimits && s.Adaptive == nil
		}
		if same {
			fmt.Fprintln(w, "Under the recorded limits:")
		} else {
			fmt.Fprintln(w, "Under the limits given:")
		}
		for _, s := range rep.Stages {
			if s.Before != nil {
				fmt.Fprintf(w, "  %s\n", describeChange(s))
			}
		}
	}
	notes(w, rep)
	if verbose && recorded {
		jobs := &table{right: map[int]bool{}}
		n := 0
		for _, s := range rep.Stages {
			for _, c := range s.Changes {
				jobs.row("  "+c.Stage, c.Job, jobOutcome(c.Recorded), "→", jobOutcome(c.Replayed)+endedShift(c))
				n++
			}
		}
		if n > 0 {
			fmt.Fprintln(w, "\nJobs whose outcome changed (recorded → replayed):")
			jobs.write(w)
		}
	}
}

func outcomeRow(stage, run string, l stages.Limits, o trace.Outcomes) []string {
	var refused []string
	for _, d := range trace.Refusals {
		if n := o.Refused.Of(d); n > 0 {
			refused = append(refused, fmt.Sprintf("%d %s", n, refusal(d)))
		}
	}
	if len(refused) == 0 {
		refused = []string{"-"}
	}
	waits := []string{"-", "-"}
	if o.Admitted > 0 {
		waits = []string{fmtDur(time.Duration(o.WaitP50)), fmtDur(time.Duration(o.WaitP99))}
	}
	return []string{stage, run, strconv.Itoa(l.Slots), strconv.Itoa(l.Waiting), fmtDur(l.MaxAge),
		strconv.Itoa(o.Offered), strconv.Itoa(o.Admitted), strconv.Itoa(o.Expired), strconv.Itoa(o.Cancelled),
		strconv.Itoa(o.Completed), strconv.Itoa(o.PeakLeased), strconv.Itoa(o.PeakWaiting), waits[0], waits[1],
		strings.Join(refused, ", ")}
}

// describeChange is one stage's difference in a line: "model: 12
// overloaded → 3 overloaded, 4 more admitted, wait p99 1.2s → 1.9s".
func describeChange(s *trace.StageReport) string {
	b, a := *s.Before, s.After
	var parts []string
	count := func(what string, x, y int) {
		if x != y {
			parts = append(parts, fmt.Sprintf("%d %s → %d %s", x, what, y, what))
		}
	}
	for _, d := range trace.Refusals {
		count(refusal(d), b.Refused.Of(d), a.Refused.Of(d))
	}
	switch n := a.Admitted - b.Admitted; {
	case n > 0:
		parts = append(parts, fmt.Sprintf("%d more admitted", n))
	case n < 0:
		parts = append(parts, fmt.Sprintf("%d fewer admitted", -n))
	}
	count("expired waiting", b.Expired, a.Expired)
	count("cancelled", b.Cancelled, a.Cancelled)
	count("completed", b.Completed, a.Completed)
	wait := func(what string, x, y trace.Seconds) {
		if fx, fy := fmtDur(time.Duration(x)), fmtDur(time.Duration(y)); fx != fy {
			parts = append(parts, what+" "+fx+" → "+fy)
		}
	}
	wait("wait p50", b.WaitP50, a.WaitP50)
	wait("wait p99", b.WaitP99, a.WaitP99)
	if b.PeakLeased != a.PeakLeased {
		parts = append(parts, fmt.Sprintf("peak leased %d → %d", b.PeakLeased, a.PeakLeased))
	}
	if b.PeakWaiting != a.PeakWaiting {
		parts = append(parts, fmt.Sprintf("peak waiting %d → %d", b.PeakWaiting, a.PeakWaiting))
	}
	name := s.Name
	if name == "" {
		name = "-"
	}
	switch n := len(s.Changes); {
	case n == 0 && len(parts) == 0:
		return name + ": no difference (every job's outcome, admission and end as recorded)"
	case n > 0:
		parts = append(parts, fmt.Sprintf("%d %s changed", n, plural(n, "job", "jobs")))
	}
	return name + ": " + strings.Join(parts, ", ")
}

// refusal names a refusal: "expired at offer" tells it from work that
// expired waiting.
func refusal(d stages.Disposition) string {
	if d == stages.Expired {
		return "expired at offer"
	}
	return d.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// notes say what limits the comparison: a trace cut short or with gaps.
func notes(w io.Writer, rep *trace.Report) {
	var lost uint64
	var where []string
	for _, s := range rep.Stages {
		if s.Lost > 0 {
			lost += s.Lost
			where = append(where, fmt.Sprintf("%s %d", s.Name, s.Lost))
		}
	}
	var out []string
	switch {
	case rep.End != nil && rep.End.Reason == "max-bytes":
		out = append(out, "Recording stopped at its size bound (-record-trace-max-bytes) at "+fmtDur(rep.End.At.Sub(trace.Origin))+
			": later traffic is not in the trace.")
	case rep.End == nil && rep.Version > 0:
		out = append(out, "The trace has no end line: its recorder did not finish (was the server killed?).")
	}
	if lost > 0 {
		out = append(out, fmt.Sprintf("The recorder dropped %d operations (its buffer was full: %s): outcomes after the first gap are approximate.",
			lost, strings.Join(where, ", ")))
	}
	for _, s := range rep.Stages {
		if s.Recorded && !s.Dispatched {
			out = append(out, fmt.Sprintf("Stage %s was not driven by a dispatcher: its operations ran as written.", s.Name))
		}
	}
	if len(out) > 0 {
		fmt.Fprintln(w)
		for _, s := range out {
			fmt.Fprintln(w, "Note: "+s)
		}
	}
}

// jobOutcome is one job's outcome in words: "expired at offer", "expired
// after 2s", "completed (waited 120ms)".
func jobOutcome(o trace.JobOutcome) string {
	s := o.Outcome
	switch {
	case o.Refused && s == stages.Expired.String():
		s += " at offer"
	case o.Refused:
	case s == stages.Expired.String() && o.Ended != nil && o.Offered != nil:
		s += " after " + fmtDur(o.Ended.Sub(o.Offered.Time))
	default:
		if d, ok := o.Wait(); ok {
			s += " (waited " + fmtDur(d) + ")"
		}
	}
	return s
}

// endedShift says how much later or earlier a job whose outcome and wait
// are unchanged ended.
func endedShift(c trace.JobChange) string {
	r, p := c.Recorded, c.Replayed
	if jobOutcome(r) != jobOutcome(p) || r.Ended == nil || p.Ended == nil {
		return ""
	}
	switch d := p.Ended.Sub(r.Ended.Time); {
	case d > 0:
		return ", ended " + fmtDur(d) + " later"
	case d < 0:
		return ", ended " + fmtDur(-d) + " earlier"
	}
	return ""
}

// fmtDur prints a duration for a table: 0s, 850µs, 120ms, 2s, 1.25s, 1m30s.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Round(10*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// table aligns rows of cells in columns: left, or right for the columns
// in right.
type table struct {
	rows  [][]string
	right map[int]bool
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// optInt is an int flag that knows whether it was given (on the command
// line, in the environment or in -config).
type optInt struct {
	v   int
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	o.v, o.set = v, true
	return nil
}

// Get is the value for checkFlags (nil while not given).
func (o *optInt) Get() any {
	if !o.set {
		return nil
	}
	return o.v
}

// optDuration is a duration flag that knows whether it was given.
type optDuration struct {
	v   time.Duration
	set bool
}

func (o *optDuration) String() string {
	if o == nil || !o.set {
		return ""
	}
	return o.v.String()
}

func (o *optDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 2s or 500ms")
	}
	o.v, o.set = v, true
	return nil
}

func (o *optDuration) Get() any {
	if !o.set {
		return nil
	}
	return o.v
}
