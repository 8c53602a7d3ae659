package session

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// BenchmarkPromptPacing is what pacing refused callers' prompts costs the
// process: N calls (default 1000; FRONTDOOR_PROMPT_CALLS) each speak a
// 1 s prompt at once, paced in real time, to transports that discard the
// frames, so that the figure is the writer's and the pacing's, not a
// socket's. Each iteration is one such second; the process's CPU time
// (user + system, getrusage) is reported per prompt-second, for a writer
// per call on timers of its own ("per-call", as before the shared pacer)
// and for the shared pacer ("shared"), side by side in one run:
//
//	go test -run '^$' -bench PromptPacing -benchtime 5x ./session
func BenchmarkPromptPacing(b *testing.B) {
	n := 1000
	if v := os.Getenv("FRONTDOOR_PROMPT_CALLS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("FRONTDOOR_PROMPT_CALLS=%q", v)
		}
	}
	const frames = 50
	for _, shared := range []bool{false, true} {
		name := "shared"
		if !shared {
			name = "per-call"
		}
		b.Run(name, func(b *testing.B) {
			r := newRig(b, func(c *Config, _ *stub.Settings) {
				c.Pace, c.perCallPacing = true, !shared
				c.Session = stages.Limits{Slots: n, Waiting: 1, MaxAge: time.Minute}
			})
			calls, trs := pacedCalls(b, r, n)
			a := promptTone(16000, time.Second)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				for _, c := range calls {
					speak(b, c, a)
				}
				for _, tr := range trs {
					sessiontest.WaitFor(b, "the prompt written", func() bool { return tr.frames.Load() == int64(frames*(i+1)) })
				}
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/prompt-s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N*frames), "cpu-µs/frame")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
