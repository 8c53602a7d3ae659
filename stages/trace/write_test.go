package trace

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// lines parses every line of a trace, failing the test on any that does
// not parse.
func lines(t *testing.T, tr []byte) []Op {
	t.Helper()
	var ops []Op
	for i, l := range strings.Split(strings.TrimSuffix(string(tr), "\n"), "\n") {
		op, err := Parse([]byte(l))
		if err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		ops = append(ops, op)
	}
	return ops
}

// TestWriterRoundTrip: every field of every operation survives the trip
// through a trace, odd identities included, times exact to the nanosecond.
func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{Origin: t0, Clock: clock.NewManual(t0.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	l := stages.Limits{Slots: 2, Waiting: 3, MaxAge: 1500*time.Millisecond + 1, TenantWaiting: 1, Tombstones: 9}
	c, err := admit.New(l, w.Stage("mödel \"x\"", l, admit.ReleaseOnCancel, true))
	if err != nil {
		t.Fatal(err)
	}
	odd := "call\n\t\"1\"\\\x00\xff☎"
	born := t0.Add(-1234567891 * time.Nanosecond)
	now := t0.Add(time.Millisecond + 1)
	c.Rotate(odd, 1<<63, now)
	deadline := t0.Add(2500 * time.Millisecond)
	c.Offer(stages.Job{ID: odd + "/t", Owner: odd, Generation: 1 << 63, Born: born, Deadline: deadline, Tenant: "ténant"}, now)
	c.Take(now)
	c.Release(odd + "/t")
	c.Release("none")
	c.Cancel("none", now)
	c.Forget(odd, now)
	c.Close()
	c.Reopen()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops := lines(t, buf.Bytes())
	got := make([]string, len(ops))
	for i, op := range ops {
		got[i] = op.Op
	}
	if want := "trace stage rotate offer take release release cancel forget close reopen end"; strings.Join(got, " ") != want {
		t.Fatalf("ops %q, want %q\n%s", got, want, buf.String())
	}
	if ops[0].Version != Version || ops[0].Started != "2026-01-01T00:00:00.000000000Z" {
		t.Errorf("trace line %+v", ops[0])
	}
	h := ops[1]
	if h.Stage != "mödel \"x\"" || h.Limits() != l || h.Policy != "release-on-cancel" || !h.Dispatched {
		t.Errorf("stage line %+v limits %+v", h, h.Limits())
	}
	o := ops[3]
	// Numeric times count from Origin: the writer's origin (t0) is "at" 0.
	if o.ID != odd[:len(odd)-4]+"\ufffd☎/t" || o.Owner != odd[:len(odd)-4]+"\ufffd☎" || *o.Generation != 1<<63 ||
		o.Born.Sub(Origin) != born.Sub(t0) || o.Deadline == nil || o.Deadline.Sub(Origin) != deadline.Sub(t0) || o.At.Sub(Origin) != now.Sub(t0) || o.Tenant != "ténant" || *o.Disposition != stages.Queued || o.Stage != h.Stage {
		t.Errorf("offer %+v", o)
	}
	if tk := ops[4]; tk.ID != o.ID || *tk.Disposition != stages.Admitted {
		t.Errorf("take %+v", tk)
	}
	if r := ops[5]; *r.Disposition != stages.Completed || r.At.Sub(Origin) != now.Sub(t0) {
		t.Errorf("release %+v", r)
	}
	if r := ops[6]; r.Disposition != nil || !strings.Contains(r.Error, "no lease") {
		t.Errorf("failed release %+v", r)
	}
	if e := ops[len(ops)-1]; e.Reason != "closed" || e.Operations != 9 || e.Dropped != 0 || e.At.Sub(Origin) != time.Hour {
		t.Errorf("end %+v", e)
	}
	if s := w.Stats(); s.Recorded != 9 || s.Bytes != int64(buf.Len()) || s.Ended != "closed" {
		t.Errorf("stats %+v (file %d bytes)", s, buf.Len())
	}
	// After Close nothing more is recorded, and Close may be called again.
	c.Close()
	if err := w.Close(); err != nil || w.Stats().NotRecorded != 1 {
		t.Errorf("after close: %v %+v", err, w.Stats())
	}
}

// TestWriterBound: recording stops at -record-trace-max-bytes with one
// warning and the end marker; the file stays within the bound and valid,
// and admission goes on.
func TestWriterBound(t *testing.T) {
	var buf, logs bytes.Buffer
	const max = 6000
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w, err := NewWriter(&buf, WriterOptions{MaxBytes: max, Origin: t0, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	l := stages.Limits{Slots: 1, Waiting: 4, MaxAge: time.Hour, Tombstones: 16}
	var now time.Time
	c, err := admit.New(l, w.Stage("model", l, admit.Frontdoor, true))
	if err != nil {
		t.Fatal(err)
	}
	now = t0
	c.Rotate("call", 1, now)
	cycles := 0
	for i := range 2000 {
		id := "turn-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		now = t0.Add(time.Duration(i) * time.Millisecond)
		if d, _ := c.Offer(stages.Job{ID: id + time.Duration(i).String(), Owner: "call", Generation: 1, Born: now}, now); d != stages.Queued {
			t.Fatalf("offer %d: %v", i, d)
		}
		if d, _, _ := c.Take(now); d != stages.Admitted {
			t.Fatalf("take %d: %v", i, d)
		}
		c.Release(id + time.Duration(i).String())
		cycles++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > max {
		t.Fatalf("trace is %d bytes, bound %d", buf.Len(), max)
	}
	ops := lines(t, buf.Bytes())
	end := ops[len(ops)-1]
	if end.Op != "end" || end.Reason != "max-bytes" {
		t.Fatalf("last line %+v", end)
	}
	s := w.Stats()
	if s.Ended != "max-bytes" || s.NotRecorded == 0 || s.Recorded+s.NotRecorded != uint64(3*cycles+1) || end.Operations != s.Recorded {
		t.Errorf("stats %+v, end %+v", s, end)
	}
	if n := strings.Count(logs.String(), "size bound"); n != 1 {
		t.Errorf("%d warnings, want one:\n%s", n, logs.String())
	}
	// What was written replays, up to where it stopped.
	rep, err := Run(bytes.NewReader(buf.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.End == nil || rep.End.Reason != "max-bytes" || len(rep.Stages) != 1 || len(rep.Stages[0].Changes) != 0 {
		t.Errorf("replay of a cut trace: %+v", rep)
	}
}

// blockedWriter lets its first write through, then holds every write until
// released.
type blockedWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	n       int
	entered chan struct{}
	gate    chan struct{}
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.n++
	first := b.n == 1
	b.mu.Unlock()
	if !first {
		select {
		case b.entered <- struct{}{}:
		default:
		}
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestWriterDropsWhenFull: a writer that cannot keep up never holds up
// admission: operations beyond its buffer are dropped, counted in the end
// line, and a gap line marks where.
func TestWriterDropsWhenFull(t *testing.T) {
	bw := &blockedWriter{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	clock := stagestest.NewClock(t0)
	w, err := NewWriter(bw, WriterOptions{Buffer: 4, Origin: t0, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	l := stages.Limits{Slots: 1, Waiting: 1, MaxAge: time.Second}
	c, err := admit.New(l, w.Stage("model", l, admit.Frontdoor, false))
	if err != nil {
		t.Fatal(err)
	}
	<-bw.entered // the writer is stuck writing the stage line
	for range 10 {
		c.Take(t0) // never waits
	}
	close(bw.gate)
	for w.Stats().Recorded < 4 {
		time.Sleep(time.Millisecond)
	}
	c.Take(t0.Add(time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bw.mu.Lock()
	ops := lines(t, bw.buf.Bytes())
	bw.mu.Unlock()
	var kinds []string
	for _, op := range ops {
		kinds = append(kinds, op.Op)
	}
	if want := "trace stage take take take take gap take end"; strings.Join(kinds, " ") != want {
		t.Fatalf("lines %q, want %q", kinds, want)
	}
	if g := ops[6]; g.Stage != "model" || g.Dropped != 6 {
		t.Errorf("gap %+v", g)
	}
	if e := ops[len(ops)-1]; e.Dropped != 6 || e.Operations != 5 {
		t.Errorf("end %+v", e)
	}
	if s := w.Stats(); s.Dropped != 6 || s.Recorded != 5 {
		t.Errorf("stats %+v", s)
	}
	rep, err := Run(bytes.NewReader(bw.buf.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stages[0].Lost != 6 {
		t.Errorf("replay lost %d, want 6", rep.Stages[0].Lost)
	}
}

func TestWriterOptions(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, WriterOptions{MaxBytes: MinMaxBytes - 1}); err != ErrMaxBytes {
		t.Fatalf("err = %v", err)
	}
}

// TestSecondsExact: times are written and read back exactly.
func TestSecondsExact(t *testing.T) {
	for _, d := range []time.Duration{0, 1, -1, time.Second, -time.Second - 1, 1234567890123456789, -250 * time.Millisecond, 1<<63 - 1} {
		b := appendSeconds(nil, d)
		var tm Time
		if err := tm.UnmarshalJSON(b); err != nil {
			if d == 1<<63-1 { // beyond the range a trace accepts
				continue
			}
			t.Fatalf("%v (%s): %v", d, b, err)
		}
		if got := tm.Sub(Origin); got != d {
			t.Errorf("%v written %s read %v", d, b, got)
		}
	}
}
