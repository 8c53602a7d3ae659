// Package trace reads and writes recorded admission operations as JSON
// lines and runs them through stages.Controllers, so that operators can try
// a limit change against real traffic before they make it.
//
// One operation per line, each with its time "at":
//
//	{"op":"rotate","owner":"call-1","generation":1,"at":0}
//	{"op":"offer","id":"t1","owner":"call-1","generation":1,"born":0,"at":0.2}
//	{"op":"take","at":0.2}
//	{"op":"release","id":"t1","at":1.5}
//	{"op":"cancel","id":"t2","at":1.6}
//	{"op":"forget","owner":"call-1","at":2}
//	{"op":"close","at":3}
//	{"op":"reopen","at":4}
//
// Times are seconds since the trace's origin (a JSON number, read exactly to
// the nanosecond) or RFC 3339 timestamps (a JSON string).
//
// # Recorded traces
//
// A trace written by a Writer (frontdoor serve -record-trace) holds every
// stage of a server in one file, and each operation's recorded outcome:
//
//	{"op":"trace","version":2,"started":"2026-01-01T10:00:00.000000000Z","at":0}
//	{"op":"stage","stage":"model","slots":4,"waiting":16,"max_age":2.5,"policy":"frontdoor","dispatched":true,"at":0.001}
//	{"stage":"model","op":"offer","id":"c1/t1/model","owner":"c1","generation":1,"born":0.4,"tenant":"acme","at":0.41,"disposition":"queued"}
//	{"stage":"model","op":"take","at":0.41,"id":"c1/t1/model","disposition":"admitted"}
//	{"stage":"model","op":"release","id":"c1/t1/model","at":1.2,"disposition":"completed"}
//	{"stage":"model","op":"stop","at":9.5}
//	{"op":"gap","stage":"model","dropped":3,"at":5.1}
//	{"op":"end","at":9.6,"reason":"closed","operations":1234,"dropped":3}
//
// "stage" names the stage an operation belongs to (absent: the one unnamed
// stage of a hand-written trace). A "stage" line gives a stage's limits and
// policy, before its first operation; "dispatched" says a admit.Dispatcher
// drove it (it took work after every change and at the head's deadline), so
// its takes are that dispatcher's. "disposition" and "error" are the
// outcome the recording saw; replay compares its own with them. "stop" is
// the dispatcher's Stop (no expiry fires after it). "gap" says operations of
// a stage were lost there because the writer's buffer was full; "end" is the
// last line: why recording ended ("closed", or "max-bytes" when the file
// reached its bound) and how many operations it wrote and dropped. Older
// traces, without these fields and lines, read as before.
package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// MaxLine is the longest line a trace may have.
const MaxLine = 64 << 10

// Version is the trace format a Writer writes: 2 added "stage", recorded
// outcomes, and the "trace", "stage", "stop", "gap" and "end" lines.
const Version = 2

// Origin is the instant that numeric trace times count from.
var Origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrSyntax reports a line that is not a valid operation.
var ErrSyntax = errors.New("trace: bad line")

// Time is a trace timestamp: seconds since Origin, or RFC 3339.
type Time struct{ time.Time }

// UnmarshalJSON accepts a number of seconds or an RFC 3339 string.
func (t *Time) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		t.Time = v
		return nil
	}
	d, err := parseSeconds(b)
	if err != nil {
		return err
	}
	t.Time = d
	return nil
}

// MarshalJSON writes seconds since Origin, exact to the nanosecond.
func (t Time) MarshalJSON() ([]byte, error) {
	return appendSeconds(nil, t.Sub(Origin)), nil
}

// at returns the trace time of t.
func at(t time.Time) *Time { return &Time{t} }

// parseSeconds reads a JSON number of seconds since Origin. A plain decimal
// (no exponent, at most nine decimals) is read exactly; any other number
// through float64.
func parseSeconds(b []byte) (time.Time, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %s: want seconds or an RFC 3339 string", b)
	}
	if f < -1e10 || f > 1e10 || math.IsNaN(f) { // ±317 years: every duration a Writer can write
		return time.Time{}, fmt.Errorf("time %s out of range", b)
	}
	base := Origin.Unix()
	if sec, ns, ok := decimal(b); ok {
		return time.Unix(base+sec, ns).UTC(), nil
	}
	whole := math.Floor(f)
	return time.Unix(base+int64(whole), int64(math.Round((f-whole)*1e9))).UTC(), nil
}

// decimal splits a plain decimal such as -12.000000345 into whole seconds
// and nanoseconds with the same sign.
func decimal(b []byte) (sec, ns int64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	whole, frac, dot := bytes.Cut(b, []byte("."))
	if len(whole) == 0 || len(whole) > 11 || (dot && (len(frac) == 0 || len(frac) > 9)) {
		return 0, 0, false
	}
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		sec = sec*10 + int64(c-'0')
	}
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, 0, false
			}
			ns += int64(c - '0')
		}
	}
	if neg {
		sec, ns = -sec, -ns
	}
	return sec, ns, true
}

// appendSeconds appends d as decimal seconds, exact and without trailing
// zeros: 12, -0.25, 1.000000001.
func appendSeconds(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = uint64(-d) // -MinInt64 wraps to itself, which as uint64 is its magnitude
	}
	b = strconv.AppendUint(b, u/1e9, 10)
	if frac := u % 1e9; frac != 0 {
		var digits [9]byte
		for i := 8; i >= 0; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 9
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, '.')
		b = append(b, digits[:n]...)
	}
	return b
}

// Seconds is a duration written as decimal seconds (a stage's max_age).
type Seconds time.Duration

// UnmarshalJSON reads a non-negative number of seconds, exact to the
// nanosecond.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '-' {
		return fmt.Errorf("duration %s: negative", b)
	}
	t, err := parseSeconds(b)
	if err != nil {
		return fmt.Errorf("duration %s: want seconds", b)
	}
	*s = Seconds(t.Sub(Origin))
	return nil
}

// MarshalJSON writes decimal seconds.
func (s Seconds) MarshalJSON() ([]byte, error) { return appendSeconds(nil, time.Duration(s)), nil }

// Op is one line of a trace: an operation, or one of the lines a Writer adds
// around them (see the package documentation).
type Op struct {
	Op         string  `json:"op"`
	At         *Time   `json:"at"`
	Stage      string  `json:"stage,omitempty"`
	ID         string  `json:"id,omitempty"`
	Owner      string  `json:"owner,omitempty"`
	Generation *uint64 `json:"generation,omitempty"`
	Born       *Time   `json:"born,omitempty"`
	Deadline   *Time   `json:"deadline,omitempty"` // offer: the job's own deadline, if it had one
	Tenant     string  `json:"tenant,omitempty"`

	// The recorded outcome.
	Disposition *stages.Disposition `json:"disposition,omitempty"`
	Error       string              `json:"error,omitempty"`

	// "trace": the format version and the wall-clock time of "at" 0.
	Version int    `json:"version,omitempty"`
	Started string `json:"started,omitempty"`

	// "stage": the stage's limits and policy, and whether a Dispatcher
	// drove it.
	Slots         *int     `json:"slots,omitempty"`
	Waiting       *int     `json:"waiting,omitempty"`
	MaxAge        *Seconds `json:"max_age,omitempty"`
	TenantWaiting int      `json:"tenant_waiting,omitempty"`
	Order         string   `json:"order,omitempty"` // fifo (omitted) or fair (stages.Order)
	Tombstones    int      `json:"tombstones,omitempty"`
	Policy        string   `json:"policy,omitempty"`
	Dispatched    bool     `json:"dispatched,omitempty"`

	// "gap" and "end": operations lost (buffer full) and written, and why
	// recording ended.
	Dropped    uint64 `json:"dropped,omitempty"`
	Operations uint64 `json:"operations,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Recorded reports whether the line carries a recorded outcome.
func (op Op) Recorded() bool { return op.Disposition != nil || op.Error != "" }

// Limits returns the limits of a "stage" line.
func (op Op) Limits() stages.Limits {
	l := stages.Limits{TenantWaiting: op.TenantWaiting, Tombstones: op.Tombstones}
	l.Order, _ = admit.ParseOrder(op.Order) // checked by Parse
	if op.Slots != nil {
		l.Slots = *op.Slots
	}
	if op.Waiting != nil {
		l.Waiting = *op.Waiting
	}
	if op.MaxAge != nil {
		l.MaxAge = time.Duration(*op.MaxAge)
	}
	return l
}

type needs struct{ id, owner, gen, born, stage, limits, reason bool }

var opNeeds = map[string]needs{
	"offer":   {id: true, owner: true, gen: true, born: true},
	"take":    {},
	"release": {id: true},
	"cancel":  {id: true},
	"rotate":  {owner: true, gen: true},
	"forget":  {owner: true},
	"close":   {},
	"reopen":  {},
	"stop":    {},
	"limit":   {}, // "slots": the slot limit moved (an adaptive limit)
	"trace":   {},
	"stage":   {stage: true, limits: true},
	"gap":     {stage: true},
	"end":     {reason: true},
}

// Operation reports whether the line is an operation on a stage (not one of
// the informational lines "trace", "stage", "gap" and "end").
func (op Op) Operation() bool {
	switch op.Op {
	case "trace", "stage", "gap", "end":
		return false
	}
	return true
}

// Parse decodes and validates one line.
func Parse(line []byte) (Op, error) {
	var op Op
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return Op{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if dec.More() {
		return Op{}, fmt.Errorf("%w: trailing data", ErrSyntax)
	}
	n, ok := opNeeds[op.Op]
	switch {
	case !ok:
		return Op{}, fmt.Errorf("%w: unknown op %q", ErrSyntax, op.Op)
	case op.At == nil:
		return Op{}, fmt.Errorf("%w: %s needs \"at\"", ErrSyntax, op.Op)
	case n.id && op.ID == "":
		return Op{}, fmt.Errorf("%w: %s needs \"id\"", ErrSyntax, op.Op)
	case n.owner && op.Owner == "":
		return Op{}, fmt.Errorf("%w: %s needs \"owner\"", ErrSyntax, op.Op)
	case n.gen && op.Generation == nil:
		return Op{}, fmt.Errorf("%w: %s needs \"generation\"", ErrSyntax, op.Op)
	case n.born && op.Born == nil:
		return Op{}, fmt.Errorf("%w: %s needs \"born\"", ErrSyntax, op.Op)
	case n.stage && op.Stage == "":
		return Op{}, fmt.Errorf("%w: %s needs \"stage\"", ErrSyntax, op.Op)
	case n.limits && (op.Slots == nil || op.Waiting == nil || op.MaxAge == nil):
		return Op{}, fmt.Errorf("%w: %s needs \"slots\", \"waiting\" and \"max_age\"", ErrSyntax, op.Op)
	case op.Op == "limit" && (op.Slots == nil || *op.Slots < 1):
		return Op{}, fmt.Errorf("%w: limit needs \"slots\" of at least 1", ErrSyntax)
	case n.reason && op.Reason == "":
		return Op{}, fmt.Errorf("%w: %s needs \"reason\"", ErrSyntax, op.Op)
	case op.Order != "" && func() bool { _, err := admit.ParseOrder(op.Order); return err != nil }():
		return Op{}, fmt.Errorf("%w: unknown order %q", ErrSyntax, op.Order)
	case op.Policy != "":
		if _, err := admit.ParsePolicy(op.Policy); err != nil {
			return Op{}, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
	}
	return op, nil
}

// Result is the outcome of one operation, printed as one JSON line. At and
// Note are set only by a replay of a recorded trace (Run).
type Result struct {
	Line        int                `json:"line"`
	Stage       string             `json:"stage,omitempty"`
	Op          string             `json:"op"`
	ID          string             `json:"id,omitempty"`
	Owner       string             `json:"owner,omitempty"`
	Disposition stages.Disposition `json:"disposition,omitempty"`
	Error       string             `json:"error,omitempty"`
	At          *Time              `json:"at,omitempty"`
	// Note says how a replay under other limits treated a recorded
	// operation it did not run as written (see Run).
	Note string `json:"note,omitempty"`
}

// Apply runs op against c. Lines that are not operations on a controller
// ("trace", "stage", "gap", "end", "stop") do nothing.
func Apply(c *admit.Controller, op Op) Result {
	r := Result{Op: op.Op, ID: op.ID, Owner: op.Owner, Stage: op.Stage}
	now := op.At.Time
	var err error
	switch op.Op {
	case "offer":
		job := stages.Job{ID: op.ID, Owner: op.Owner, Generation: *op.Generation, Born: op.Born.Time, Tenant: op.Tenant}
		if op.Deadline != nil {
			job.Deadline = op.Deadline.Time
		}
		r.Disposition, err = c.Offer(job, now)
	case "take":
		r.Disposition, r.ID, err = c.Take(now)
	case "release":
		if op.Disposition != nil && *op.Disposition == stages.Failed {
			r.Disposition, err = c.ReleaseFailed(op.ID) // its backend had failed
		} else {
			r.Disposition, err = c.Release(op.ID)
		}
	case "cancel":
		r.Disposition, err = c.Cancel(op.ID, now)
	case "rotate":
		err = c.Rotate(op.Owner, *op.Generation, now)
	case "forget":
		c.Forget(op.Owner, now)
	case "close":
		c.Close()
	case "reopen":
		c.Reopen()
	case "limit":
		_, err = c.SetSlots(0, *op.Slots)
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// Summary is the last line of a replay (one per stage for a trace of
// several stages).
type Summary struct {
	Stage      string          `json:"stage,omitempty"`
	Operations int             `json:"operations"`
	Errors     int             `json:"errors"`
	Final      stages.Snapshot `json:"final"`
	// Recorded and Replayed are set by Run: the stage's outcomes as
	// recorded (for a recorded trace) and under the replay's limits.
	Recorded *Outcomes `json:"recorded,omitempty"`
	Replayed *Outcomes `json:"replayed,omitempty"`
}

// Replay runs every operation read from r through c, as written, writing
// each Result and then a Summary to w as JSON lines. A line that is not a
// valid operation stops the replay with an error naming its line number; an
// operation the controller rejects is reported in its Result and the replay
// goes on. Lines that are not operations ("trace", "stage", "gap", "end")
// are skipped; for a trace of several stages see Run.
func Replay(c *admit.Controller, r io.Reader, w io.Writer) (Summary, error) {
	enc := json.NewEncoder(w)
	var sum Summary
	var last time.Time
	err := scan(r, func(n int, op Op) error {
		if !op.Operation() {
			return nil
		}
		res := Apply(c, op)
		res.Line = n
		sum.Operations++
		if res.Error != "" {
			sum.Errors++
		}
		if op.At.After(last) {
			last = op.At.Time
		}
		return enc.Encode(res)
	})
	if err != nil {
		return sum, err
	}
	sum.Final = c.Snapshot(last)
	return sum, enc.Encode(sum)
}

// scan calls f with each line of r that is not blank nor a # comment, and
// its line number. A line that does not parse stops it with an error naming
// the line.
func scan(r io.Reader, f func(n int, op Op) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		op, err := Parse(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := f(n, op); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}
