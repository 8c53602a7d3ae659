package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestReplayCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "-slots", "1", "-waiting", "2", "-max-age", "2s", "../../stages/trace/testdata/reference.jsonl"}, &out, &errb)
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
	if code := run(context.Background(), []string{"replay", "-slots", "1", "-waiting", "1", "-max-age", "2s", "../../stages/trace/testdata/reference.jsonl"}, &out, &errb); code != 0 {
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
	code := run(context.Background(), []string{"replay", "-config", cfg, "-max-age", "1s", trace}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"slots":3,"waiting":7`) {
		t.Errorf("want slots from the file and waiting from the environment: %s", out.String())
	}
}
