package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestReplayCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "-json", "-slots", "1", "-waiting", "2", "-max-age", "2s", "../../stages/trace/testdata/reference.jsonl"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 26 {
		t.Fatalf("%d lines of output, want 25 results and a summary", len(lines))
	}
	if !strings.Contains(lines[len(lines)-1], `"offered":9`) {
		t.Errorf("summary: %s", lines[len(lines)-1])
	}
	// A tighter queue changes the outcome of the same trace.
	out.Reset()
	if code := run(context.Background(), []string{"replay", "-json", "-slots", "1", "-waiting", "1", "-max-age", "2s", "../../stages/trace/testdata/reference.jsonl"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), `"id":"two","owner":"caller-b","disposition":"overloaded"`) {
		t.Errorf("with one waiting position, two should be refused:\n%s", out.String())
	}
}

func TestReplayCommandBadLine(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	name := dir + "/bad.jsonl"
	writeFile(t, name, "{\"op\":\"take\",\"at\":0}\n{\"op\":\"take\"\n")
	if code := run(context.Background(), []string{"replay", name}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "line 2") {
		t.Errorf("error does not name the line: %s", errb.String())
	}
}

func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/frontdoor.conf"
	writeFile(t, cfg, "# limits\nslots = 3\nwaiting = 5\n")
	t.Setenv("FRONTDOOR_WAITING", "7")
	var out, errb bytes.Buffer
	trace := dir + "/t.jsonl"
	writeFile(t, trace, `{"op":"take","at":0}`+"\n")
	code := run(context.Background(), []string{"replay", "-json", "-config", cfg, "-max-age", "1s", trace}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"slots":3,"waiting":7`) {
		t.Errorf("want slots from the file and waiting from the environment: %s", out.String())
	}
}

// TestReplayTableGolden pins the tables replay prints for people: a
// hand-written trace, a recorded one under its own limits (no difference),
// and the same under smaller limits with every changed job (-v).
func TestReplayTableGolden(t *testing.T) {
	const ref, rec = "../../stages/trace/testdata/reference.jsonl", "../../stages/trace/testdata/recorded.jsonl"
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"replay-reference.golden", []string{"replay", "-slots", "1", "-waiting", "2", "-max-age", "2s", ref}},
		{"replay-recorded.golden", []string{"replay", rec}},
		{"replay-recorded-limits.golden", []string{"replay", "-v", "-model-slots", "1", "-model-queue", "1", "-session-max-wait", "200ms", rec}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, tc.golden, out)
		})
	}
}

// TestReplayJSONKeepsFormat: -json on a hand-written trace prints what
// replay printed before it had tables, line for line.
func TestReplayJSONKeepsFormat(t *testing.T) {
	code, out, errOut := runCLI(t, "replay", "-json", "-slots", "1", "-waiting", "2", "-max-age", "2s", "-tombstones", "64", "../../stages/trace/testdata/reference.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile("../../stages/trace/testdata/reference.golden")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("-json output differs from stages/trace/testdata/reference.golden:\n%s", out)
	}
}

// TestReplayFlagsNamed: a bad limit is refused naming its flag.
func TestReplayFlagsNamed(t *testing.T) {
	for flag, want := range map[string]string{"-model-slots=0": "-model-slots 0: want at least 1", "-waiting=0": "-waiting 0: want at least 1",
		"-synth-max-wait=-1s": "-synth-max-wait -1s: must not be negative", "-hold=-1s": "-hold -1s: must not be negative"} {
		code, _, errOut := runCLI(t, "replay", flag, "../../stages/trace/testdata/recorded.jsonl")
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", flag, code, errOut, want)
		}
	}
}

// TestReplayAdaptiveAndFair: replay runs a recorded trace under an
// adaptive limit (-model-auto) and fair order with a tenant share, and says
// so in its table; a bad bound is refused naming its flag.
func TestReplayAdaptiveAndFair(t *testing.T) {
	const rec = "../../stages/trace/testdata/recorded.jsonl"
	code, out, errOut := runCLI(t, "replay", "-model-auto", "1-8", "-order", "fair", "-tenant-share", "1", rec)
	if code != 0 || !strings.Contains(out, "replayed auto fair  1-8: ") || !strings.Contains(out, "replayed fair") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, bad := range []string{"-model-auto=0-4", "-model-auto=5-4", "-order=lifo", "-tenant-share=-1"} {
		if code, _, errOut := runCLI(t, "replay", bad, rec); code != 2 || !strings.Contains(errOut, strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: exit %d, %q", bad, code, errOut)
		}
	}
}
