package trace

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newController(t testing.TB) *admit.Controller {
	c, err := admit.New(stages.Limits{Slots: 1, Waiting: 2, MaxAge: 2 * time.Second, Tombstones: 64})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReplayReference(t *testing.T) {
	in, err := os.ReadFile("testdata/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := Replay(newController(t), bytes.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Operations != 25 || sum.Errors != 1 {
		t.Errorf("operations %d errors %d, want 25 and 1 (the second release)", sum.Operations, sum.Errors)
	}
	if err := sum.Final.Ledger.Check(sum.Final.Queued, sum.Final.Leased); err != nil {
		t.Error(err)
	}
	golden := "testdata/reference.golden"
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("replay output differs from %s:\n%s", golden, out.String())
	}
}

func TestReplayBadLines(t *testing.T) {
	tests := []struct{ name, trace, want string }{
		{"not json", "{\"op\":\"take\",\"at\":0}\nnope\n", "line 2"},
		{"unknown op", `{"op":"explode","at":0}`, "unknown op"},
		{"missing time", `{"op":"take"}`, "needs \"at\""},
		{"missing id", `{"op":"release","at":0}`, "needs \"id\""},
		{"missing generation", `{"op":"rotate","owner":"a","at":0}`, "needs \"generation\""},
		{"unknown field", `{"op":"take","at":0,"colour":3}`, "unknown field"},
		{"bad time", `{"op":"take","at":"yesterday"}`, "line 1"},
		{"negative generation", `{"op":"rotate","owner":"a","generation":-1,"at":0}`, "line 1"},
		{"trailing", `{"op":"take","at":0} {}`, "trailing"},
		{"too long", `{"op":"take","at":0,"id":"` + strings.Repeat("x", MaxLine) + `"}`, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Replay(newController(t), strings.NewReader(tt.trace), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	_, err := Replay(newController(t), strings.NewReader(`{"op":"bogus","at":0}`), &bytes.Buffer{})
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("err = %v, want ErrSyntax", err)
	}
}

func TestTimeFormats(t *testing.T) {
	for _, in := range []string{`{"op":"take","at":1.5}`, `{"op":"take","at":"2000-01-01T00:00:01.5Z"}`} {
		op, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if want := Origin.Add(1500 * time.Millisecond); !op.At.Equal(want) {
			t.Errorf("%s: at %v, want %v", in, op.At.Time, want)
		}
	}
}

// FuzzReplay runs arbitrary operation sequences: no input may panic, and the
// ledger must balance after every trace that replays.
func FuzzReplay(f *testing.F) {
	seed, _ := os.ReadFile("testdata/reference.jsonl")
	f.Add(seed)
	f.Add([]byte(`{"op":"rotate","owner":"a","generation":1,"at":0}` + "\n" + `{"op":"offer","id":"x","owner":"a","generation":1,"born":0,"at":5}`))
	f.Add([]byte(`{"op":"take","at":1e300}`))
	f.Add(recordedSeed)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newController(t)
		sum, err := Replay(c, bytes.NewReader(data), &bytes.Buffer{})
		if err != nil {
			return
		}
		if err := sum.Final.Ledger.Check(sum.Final.Queued, sum.Final.Leased); err != nil {
			t.Fatal(err)
		}
		if sum.Final.Leased > 1 || sum.Final.Queued > 2 {
			t.Fatalf("limits broken: %+v", sum.Final)
		}
	})
}

// recordedSeed is a recorded trace of the current format: stage lines,
// recorded outcomes, tenants, a gap, stop and the end marker.
var recordedSeed = []byte(`{"op":"trace","version":2,"started":"2026-01-01T00:00:00.000000000Z","at":0}
{"op":"stage","stage":"model","slots":1,"waiting":2,"max_age":2,"tenant_waiting":1,"policy":"frontdoor","dispatched":true,"at":0}
{"stage":"model","op":"rotate","owner":"a","generation":1,"at":0}
{"stage":"model","op":"take","at":0,"disposition":"empty"}
{"stage":"model","op":"offer","id":"a1","owner":"a","generation":1,"born":-0.25,"tenant":"acme","at":0.000000001,"disposition":"queued"}
{"stage":"model","op":"take","at":0.000000001,"id":"a1","disposition":"admitted"}
{"stage":"model","op":"take","at":0.000000001,"disposition":"empty"}
{"op":"gap","stage":"model","dropped":2,"at":0.5}
{"stage":"model","op":"release","id":"a1","at":1.5,"disposition":"completed"}
{"stage":"model","op":"release","id":"a1","at":1.5,"error":"stages: no lease held: \"a1\""}
{"stage":"model","op":"stop","at":2}
{"op":"end","at":2,"reason":"closed","operations":8,"dropped":2}
`)

// FuzzRun runs arbitrary traces through Run under small limits: no input
// may panic, every stage's ledger balances, and the replay keeps its limits.
func FuzzRun(f *testing.F) {
	seed, _ := os.ReadFile("testdata/reference.jsonl")
	f.Add(seed)
	f.Add(recordedSeed)
	f.Fuzz(func(t *testing.T, data []byte) {
		l := stages.Limits{Slots: 1, Waiting: 2, MaxAge: 2 * time.Second, Tombstones: 16}
		rep, err := Run(bytes.NewReader(data), Options{Limits: func(string, stages.Limits, bool) stages.Limits { return l }})
		if err != nil {
			return
		}
		for _, s := range rep.Stages {
			if err := s.Final.Ledger.Check(s.Final.Queued, s.Final.Leased); err != nil {
				t.Fatal(err)
			}
			if s.After.PeakLeased > 1 || s.After.PeakWaiting > 2 {
				t.Fatalf("limits broken: %+v", s.After)
			}
		}
	})
}

// TestRecordedSeed: the fuzz seed is a trace Run reads as recorded, and
// that old readers' fields still mean what they meant.
func TestRecordedSeed(t *testing.T) {
	rep, err := Run(bytes.NewReader(recordedSeed), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Stages[0]
	if rep.Version != 2 || rep.End == nil || s.Name != "model" || !s.Dispatched || s.Lost != 2 || len(s.Changes) != 0 ||
		s.Limits.TenantWaiting != 1 || s.Before.Completed != 1 || s.Before.Errors != 1 || s.After != *s.Before {
		t.Fatalf("%+v %+v", rep, s)
	}
}
