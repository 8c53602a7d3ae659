// Package trace reads recorded admission operations as JSON lines and runs
// them through a stages.Controller, so that operators can try a limit change
// against real traffic before they make it.
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
// Times are seconds since the trace's origin (a JSON number) or RFC 3339
// timestamps (a JSON string).
package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// MaxLine is the longest line a trace may have.
const MaxLine = 64 << 10

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
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("time %s: want seconds or an RFC 3339 string", b)
	}
	if f < -1e9 || f > 1e10 {
		return fmt.Errorf("time %s out of range", b)
	}
	t.Time = Origin.Add(time.Duration(f * float64(time.Second)))
	return nil
}

// Op is one recorded operation.
type Op struct {
	Op         string  `json:"op"`
	At         *Time   `json:"at"`
	ID         string  `json:"id,omitempty"`
	Owner      string  `json:"owner,omitempty"`
	Generation *uint64 `json:"generation,omitempty"`
	Born       *Time   `json:"born,omitempty"`
}

var needs = map[string]struct{ id, owner, gen, born bool }{
	"offer":   {id: true, owner: true, gen: true, born: true},
	"take":    {},
	"release": {id: true},
	"cancel":  {id: true},
	"rotate":  {owner: true, gen: true},
	"forget":  {owner: true},
	"close":   {},
	"reopen":  {},
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
	n, ok := needs[op.Op]
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
	}
	return op, nil
}

// Result is the outcome of one operation, printed as one JSON line.
type Result struct {
	Line        int                `json:"line"`
	Op          string             `json:"op"`
	ID          string             `json:"id,omitempty"`
	Owner       string             `json:"owner,omitempty"`
	Disposition stages.Disposition `json:"disposition,omitempty"`
	Error       string             `json:"error,omitempty"`
}

// Apply runs op against c.
func Apply(c *stages.Controller, op Op) Result {
	r := Result{Op: op.Op, ID: op.ID, Owner: op.Owner}
	now := op.At.Time
	var err error
	switch op.Op {
	case "offer":
		r.Disposition, err = c.Offer(stages.Job{ID: op.ID, Owner: op.Owner, Generation: *op.Generation, Born: op.Born.Time}, now)
	case "take":
		r.Disposition, r.ID, err = c.Take(now)
	case "release":
		r.Disposition, err = c.Release(op.ID)
	case "cancel":
		r.Disposition, err = c.CancelAt(op.ID, now)
	case "rotate":
		err = c.RotateAt(op.Owner, *op.Generation, now)
	case "forget":
		c.ForgetAt(op.Owner, now)
	case "close":
		c.Close()
	case "reopen":
		c.Reopen()
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// Summary is the last line of a replay.
type Summary struct {
	Operations int             `json:"operations"`
	Errors     int             `json:"errors"`
	Final      stages.Snapshot `json:"final"`
}

// Replay runs every operation read from r through c, writing each Result and
// then a Summary to w as JSON lines. A line that is not a valid operation
// stops the replay with an error naming its line number; an operation the
// controller rejects is reported in its Result and the replay goes on.
func Replay(c *stages.Controller, r io.Reader, w io.Writer) (Summary, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLine)
	enc := json.NewEncoder(w)
	var sum Summary
	var last time.Time
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		op, err := Parse(line)
		if err != nil {
			return sum, fmt.Errorf("line %d: %w", n, err)
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
		if err := enc.Encode(res); err != nil {
			return sum, err
		}
	}
	if err := sc.Err(); err != nil {
		return sum, fmt.Errorf("line %d: %w", n+1, err)
	}
	sum.Final = c.SnapshotAt(last)
	return sum, enc.Encode(sum)
}
