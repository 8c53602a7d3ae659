package webrtc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestPionLogsThroughSlog: pion's leveled loggers write JSON lines of the
// server's logger, at its levels, with their scope; trace lines stay out
// of a debug log.
func TestPionLogsThroughSlog(t *testing.T) {
	var b bytes.Buffer
	f := slogFactory{slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l := f.NewLogger("ice")
	l.Tracef("trace %d", 1)
	l.Trace("trace")
	l.Debugf("debug %d", 2)
	l.Info("info")
	l.Warnf("warn %s", "w")
	l.Error("error")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if m["component"] != "pion" || m["scope"] != "ice" {
			t.Errorf("line %v lacks component pion, scope ice", m)
		}
		got = append(got, m["level"].(string)+" "+m["msg"].(string))
	}
	want := []string{"DEBUG debug 2", "INFO info", "WARN warn w", "ERROR error"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
}
