package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// modelOutcome reads a call's messages until the model stage decides its
// turn: admitted, queued or a refusal.
func modelOutcome(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	for {
		m := next(t, c, "disposition")
		if m.Stage == "model" {
			return m.Disposition
		}
	}
}

// stopServe sends SIGTERM and waits for a clean exit.
func stopServe(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
}

// logged reports the log lines of an exited server whose msg contains s.
func logged(p *proc, s string) []map[string]any {
	var out []map[string]any
	for m := range p.logs {
		if msg, _ := m["msg"].(string); strings.Contains(msg, s) {
			out = append(out, m)
		}
	}
	return out
}

// replayJSON runs frontdoor replay -json and returns each stage's summary
// line and every job change line.
func replayJSON(t *testing.T, args ...string) (sums map[string]map[string]any, changes []map[string]any) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"replay", "-json"}, args...)...)
	if code != 0 {
		t.Fatalf("replay %v: exit %d: %s", args, code, errOut)
	}
	sums = map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		switch {
		case m["final"] != nil:
			sums[m["stage"].(string)] = m
		case m["job"] != nil:
			changes = append(changes, m)
		}
	}
	return sums, changes
}

func outcome(sum map[string]any, run string) map[string]any { return sum[run].(map[string]any) }

func refusedOf(o map[string]any, d string) float64 {
	f, _ := o["refused"].(map[string]any)[d].(float64)
	return f
}

// TestServeRecordTrace records a real frontdoor serve with -record-trace:
// calls admitted, one queued until it expires, one refused; turns admitted,
// queued and refused by the model stage; barge-ins over running and queued
// work; hang-ups and a drain. Replayed under the recorded limits the trace
// gives exactly the recorded outcomes; under smaller limits it refuses more.
func TestServeRecordTrace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	p := startServe(t, nil, "-record-trace", path,
		"-session-slots", "3", "-session-queue", "1", "-session-max-wait", "300ms",
		"-model-slots", "2", "-model-queue", "2", "-stub-model-delay", "600ms")
	calls := make([]*websocket.Conn, 3)
	for i := range calls {
		c, _, err := dial(t, p.ws("/v1/session"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := next(t, c, "session"); m.Disposition != "admitted" {
			t.Fatalf("call %d: session %+v", i, m)
		}
		calls[i] = c
	}
	// Three turns on two model slots: two run, the third waits.
	for i, c := range calls[:2] {
		send(t, c, `{"type":"turn","id":"t`+string(rune('1'+i))+`","text":"hello"}`)
		d := modelOutcome(t, c)
		if d == "queued" {
			d = modelOutcome(t, c)
		}
		if d != "admitted" {
			t.Fatalf("call %d: model %s", i, d)
		}
	}
	send(t, calls[2], `{"type":"turn","id":"t3","text":"hello"}`)
	if d := modelOutcome(t, calls[2]); d != "queued" {
		t.Fatalf("third turn: model %s", d)
	}
	running, waiting := calls[:2], calls[2:]
	// Barge in over the waiting turn (cancelled in the queue) and over a
	// running one (cancelled, its lease held until the stub stops).
	send(t, waiting[0], `{"type":"barge_in"}`)
	send(t, running[0], `{"type":"barge_in"}`)
	for _, c := range []*websocket.Conn{waiting[0], running[0]} {
		next(t, c, "interrupted")
		if m := next(t, c, "turn_end"); m.Disposition != "cancelled" {
			t.Fatalf("barged turn ended %+v", m)
		}
	}
	if m := next(t, running[1], "turn_end"); m.Disposition != "completed" {
		t.Fatalf("turn ended %+v", m)
	}
	// A fourth caller waits for a line until its wait expires; a fifth,
	// with the queue full, is refused.
	c4, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := next(t, c4, "session"); m.Disposition != "queued" {
		t.Fatalf("fourth caller %+v", m)
	}
	c5, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := next(t, c5, "session"); m.Disposition != "overloaded" {
		t.Fatalf("fifth caller %+v", m)
	}
	if m := next(t, c4, "session"); m.Disposition != "expired" {
		t.Fatalf("fourth caller %+v", m)
	}
	c4.CloseNow()
	c5.CloseNow()
	for _, c := range calls {
		send(t, c, `{"type":"hangup"}`)
		closeCode(t, c)
	}
	stopServe(t, p)

	// The trace is complete: every stage, and its end line last.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("trace mode %v, want 0600 (it holds call and tenant ids)", st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"op":"end"`) || !strings.Contains(last, `"reason":"closed"`) || !strings.Contains(last, `"dropped":0}`) {
		t.Fatalf("last line %s", last)
	}
	if got := logged(p, "stage trace recorded"); len(got) != 1 || got[0]["dropped"] != float64(0) {
		t.Errorf("closing log line: %v", got)
	}

	// Under the recorded limits: no job changes, every stage's outcomes as
	// recorded.
	sums, changes := replayJSON(t, path)
	if len(changes) != 0 {
		t.Fatalf("%d jobs changed under the recorded limits, first %v", len(changes), changes[0])
	}
	for _, name := range []string{"session", "recognize", "model", "synthesis"} {
		s := sums[name]
		if s == nil {
			t.Fatalf("no stage %s in the replay", name)
		}
		if !reflect.DeepEqual(s["recorded"], s["replayed"]) {
			t.Errorf("stage %s:\nrecorded %v\nreplayed %v", name, s["recorded"], s["replayed"])
		}
	}
	ses, mod := outcome(sums["session"], "recorded"), outcome(sums["model"], "recorded")
	if ses["offered"] != float64(5) || ses["admitted"] != float64(3) || ses["expired"] != float64(1) || refusedOf(ses, "overloaded") != 1 {
		t.Errorf("session recorded %v", ses)
	}
	if mod["offered"] != float64(3) || mod["admitted"] != float64(2) || mod["cancelled"] != float64(2) || mod["completed"] != float64(1) {
		t.Errorf("model recorded %v", mod)
	}
	code, table, _ := runCLI(t, "replay", path)
	for _, want := range []string{"Under the recorded limits:", "session: no difference", "model: no difference", "synthesis: no difference"} {
		if code != 0 || !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	// Under smaller limits the same traffic is refused more.
	sums, changes = replayJSON(t, "-session-slots", "1", "-model-slots", "1", "-model-queue", "1", path)
	for _, name := range []string{"session", "model"} {
		rec, rep := outcome(sums[name], "recorded"), outcome(sums[name], "replayed")
		if refusedOf(rep, "overloaded") <= refusedOf(rec, "overloaded") || rep["admitted"].(float64) > rec["admitted"].(float64) {
			t.Errorf("stage %s under smaller limits:\nrecorded %v\nreplayed %v", name, rec, rep)
		}
	}
	if len(changes) == 0 {
		t.Error("no job changes under smaller limits")
	}
}

// TestServeRecordTraceBound: at -record-trace-max-bytes recording stops
// with one warning and the end line, the file stays within the bound and
// replays, and calls go on as before.
func TestServeRecordTraceBound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	const max = 4096
	p := startServe(t, nil, "-record-trace", path, "-record-trace-max-bytes", "4096")
	for i := range 8 {
		c, _, err := dial(t, p.ws("/v1/session"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := next(t, c, "session"); m.Disposition != "admitted" {
			t.Fatalf("call %d: %+v", i, m)
		}
		send(t, c, `{"type":"turn","id":"t1","text":"hello"}`)
		if m := next(t, c, "turn_end"); m.Disposition != "completed" {
			t.Fatalf("call %d: turn %+v", i, m)
		}
		send(t, c, `{"type":"hangup"}`)
		closeCode(t, c)
	}
	stopServe(t, p)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > max {
		t.Fatalf("trace is %d bytes, bound %d", len(data), max)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"op":"end"`) || !strings.Contains(last, `"reason":"max-bytes"`) {
		t.Fatalf("last line %s", last)
	}
	if warns := logged(p, "size bound"); len(warns) != 1 || warns[0]["level"] != "WARN" {
		t.Errorf("warnings: %v", warns)
	}
	code, out, errOut := runCLI(t, "replay", path)
	if code != 0 || !strings.Contains(out, "Recording stopped at its size bound") {
		t.Errorf("replay of a bounded trace: exit %d %s\n%s", code, errOut, out)
	}
}

// TestServeRecordTraceRefused: fleet mode and a bound too small are
// refused with the flag named, before serving.
func TestServeRecordTraceRefused(t *testing.T) {
	t.Parallel()
	bin := buildOnce(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-store", "redis://127.0.0.1:1/0"}, "-record-trace records the in-process stages; it cannot be used with -store"},
		{[]string{"-record-trace-max-bytes", "100"}, "-record-trace-max-bytes 100: want at least 4096"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		args := append([]string{"serve", "-listen", "127.0.0.1:0", "-data-dir", t.TempDir(), "-record-trace", filepath.Join(t.TempDir(), "t.jsonl")}, quickStubs...)
		cmd := exec.CommandContext(ctx, bin, append(args, tc.args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: exit %d (%v), want 2 and %q:\n%s", tc.args, code, err, tc.want, out)
		}
	}
}
