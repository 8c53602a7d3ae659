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
)

var update = flag.Bool("update", false, "rewrite golden files")

func newController(t testing.TB) *stages.Controller {
	c, err := stages.New(stages.Limits{Slots: 1, Waiting: 2, MaxAge: 2 * time.Second, Tombstones: 64})
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
		{"unknown field", `{"op":"take","at":0,"slots":3}`, "unknown field"},
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
