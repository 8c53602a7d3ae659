package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

var fast = stub.Settings{ModelDelay: 20 * time.Millisecond, TokenDelay: 2 * time.Millisecond, Tokens: 4,
	SynthDelay: 10 * time.Millisecond, FrameCount: 5, FrameDelay: 5 * time.Millisecond, CleanupDelay: 10 * time.Millisecond}

// A short overloaded run against the real server: every caller and turn is
// accounted for once, the callers' view matches the server's ledgers, and
// the reports are produced.
//
// The overload does not depend on timing: 30 callers arrive in one burst
// at a session stage of 4 lines and 2 places in its queue, and every
// admitted caller holds its line for 1.5s after its turns, so the session
// stage stays full while the burst dials (milliseconds) and the 24 callers
// beyond its lines and queue are refused before retention.
func TestSmokeRunBalances(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOpts{
		session: stages.Limits{Slots: 4, Waiting: 2, MaxAge: 10 * time.Second},
		model:   stages.Limits{Slots: 2, Waiting: 2, MaxAge: 150 * time.Millisecond},
		synt:    stages.Limits{Slots: 2, Waiting: 2, MaxAge: 150 * time.Millisecond},
		stub:    fast,
	})
	var progress []load.Progress
	r, err := load.Run(context.Background(), load.Config{
		Target: ts.URL, Callers: 30, Rate: 10, Arrival: load.Burst, BurstSize: 30,
		Turns: 2, Think: 10 * time.Millisecond, Hold: 1500 * time.Millisecond,
		BargeIn: 0.3, BargeAfter: 10 * time.Millisecond,
		Deadline: 500 * time.Millisecond, Duration: 20 * time.Second,
		Progress: func(p load.Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	if !r.Callers.Balanced || !r.Turns.Balanced {
		t.Errorf("ledger does not balance: %+v %+v", r.Callers, r.Turns)
	}
	if r.Callers.Offered != 30 || r.Callers.Active != 0 || r.Callers.Queued != 0 {
		t.Errorf("callers: %+v, want 30 offered, none left on the line", r.Callers)
	}
	if r.Callers.RefusedBeforeRetention != 24 || r.Callers.ByEnd[load.EndServed] != 6 || r.Goodput.Good == 0 {
		t.Errorf("want 24 refused, 6 served (4 at once, 2 after queueing) and some good turns: %s", r.Summary())
	}
	if !r.Server.Matches {
		t.Errorf("server ledgers differ from the callers' view: %+v", r.Server)
	}
	if r.BargeIn.StaleAfter != 0 || r.Goodput.Untyped != 0 {
		t.Errorf("stale after interrupted %d, untyped %d", r.BargeIn.StaleAfter, r.Goodput.Untyped)
	}
	if len(progress) == 0 || !progress[len(progress)-1].Final {
		t.Errorf("no final progress report")
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back load.Report
	if err := json.Unmarshal(js.Bytes(), &map[string]any{}); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	_ = back
	var h bytes.Buffer
	if err := r.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	html := h.String()
	if strings.Count(html, "<svg") < 3 || !strings.Contains(html, "<polyline") {
		t.Errorf("HTML report lacks its SVG charts")
	}
	for _, ref := range []string{`src="http`, `href="http`, `url(http`, "@import", "<script", "<link"} {
		if strings.Contains(html, ref) {
			t.Errorf("HTML report has an external reference %q", ref)
		}
	}
}

// TestReportsCPU: a streaming run reports its call-seconds and each
// process's CPU over them; here server and generator are one process, read
// once from /proc (-server-pid) and once from rusage. Without -server-pid
// the figure comes from /metrics, which this in-process server does not
// serve a process counter on, and the report says so instead of a zero.
func TestReportsCPU(t *testing.T) {
	ts := startServer(t, serverOpts{session: roomy(4), model: roomy(4), synt: roomy(4), stub: fast})
	pid := 0
	if runtime.GOOS == "linux" {
		pid = os.Getpid()
	}
	cfg := load.Config{Target: ts.URL, Callers: 4, Rate: 100, Arrival: load.Burst, BurstSize: 4, Turns: 1,
		Hold: 300 * time.Millisecond, BargeIn: 0, StreamAudio: true, Deadline: time.Second, Duration: 10 * time.Second,
		ServerPID: pid}
	r, err := load.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Summary())
	c := r.CPU
	if c.CallSeconds < 4*0.3 || c.CallSeconds > 4*10 {
		t.Errorf("%.2f call-seconds, want 4 calls of at least 300 ms", c.CallSeconds)
	}
	// fast's replies are 5 frames: 4 turns of them are 0.4 s of audio.
	if c.ReplyAudioSeconds != 0.4 {
		t.Errorf("%.3f s of reply audio, want 4 turns x 5 frames x 20 ms", c.ReplyAudioSeconds)
	}
	if g := c.Generator; g.Missing != "" || g.Source != "rusage" || g.Seconds <= 0 || g.PerCallSecond != 1000*g.Seconds/c.CallSeconds ||
		g.PerAudioSecond != 1000*g.Seconds/c.ReplyAudioSeconds || g.PerFrame != 1e6*g.Seconds/float64(c.Frames) {
		t.Errorf("generator CPU %+v", g)
	}
	// The 20 reply frames received, and those streamed over at least
	// 4 x 300 ms on the line, 20 ms apart (a tick of the streamer may be
	// dropped, never doubled).
	if streamed := c.Frames - 20; streamed < 4*300/20/2 || float64(streamed) > c.CallSeconds*50+4 {
		t.Errorf("%d frames moved in %.2f call-seconds: want 20 received and about 50 a call-second streamed", c.Frames, c.CallSeconds)
	}
	if pid != 0 && (c.Server.Missing != "" || !strings.HasPrefix(c.Server.Source, "/proc/") || c.Server.Seconds < 0) {
		t.Errorf("server CPU from /proc: %+v", c.Server)
	}
	if !strings.Contains(r.Summary(), "cpu: ") || !strings.Contains(r.Summary(), "reply audio: jitter") {
		t.Errorf("summary lacks the cpu and jitter lines:\n%s", r.Summary())
	}
	cfg.ServerPID = 0
	r, err = load.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.CPU.Server.Missing, "process_cpu_seconds_total") {
		t.Errorf("server without a process counter: %+v, want it reported missing", r.CPU.Server)
	}
}

// A rate the generator cannot meet is reported as lag, not hidden.
func TestGeneratorReportsLag(t *testing.T) {
	ts := startServer(t, serverOpts{session: roomy(10), model: roomy(4), synt: roomy(4), stub: fast})
	// One line at a time and callers that hold it for 50ms: 1000/s is out
	// of reach.
	r, err := load.Run(context.Background(), load.Config{
		Target: ts.URL, Callers: 10, Rate: 1000, Arrival: load.Steady, MaxActive: 1,
		Hold: 50 * time.Millisecond, Duration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Generator.Behind || time.Duration(r.Generator.Lag.Max) < 100*time.Millisecond {
		t.Errorf("generator lag not reported: %+v", r.Generator)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "fell behind") {
		t.Errorf("no warning: %v", r.Warnings)
	}
}

func TestConfigRefusesRemoteAndUnbounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  load.Config
		want error
	}{
		{"remote", load.Config{Target: "http://192.0.2.1:8080", Callers: 1, Rate: 1}, load.ErrRemoteTarget},
		{"remote name", load.Config{Target: "example.com:80", Callers: 1, Rate: 1}, load.ErrRemoteTarget},
		{"too many", load.Config{Target: "127.0.0.1:1", Callers: load.MaxCallers + 1, Rate: 1}, load.ErrBadConfig},
		{"too long", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, Duration: 2 * load.MaxDuration}, load.ErrBadConfig},
		{"no rate", load.Config{Target: "127.0.0.1:1", Callers: 1}, load.ErrBadConfig},
		{"unknown protocol", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, Dialect: "pigeon"}, load.ErrBadConfig},
		{"frame not a multiple of 20", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, FrameMS: 50}, load.ErrBadConfig},
		{"frame too long", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, FrameMS: 140}, load.ErrBadConfig},
		{"negative frame", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, FrameMS: -20}, load.ErrBadConfig},
		{"negative spread", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, Spread: -time.Second}, load.ErrBadConfig},
		{"long frame on twilio", load.Config{Target: "127.0.0.1:1", Callers: 1, Rate: 1, Dialect: load.Twilio, FrameMS: 60}, load.ErrBadConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := load.Run(context.Background(), tc.cfg); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
