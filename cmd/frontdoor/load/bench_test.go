package load_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The benchmarks below run whole load runs against in-process servers, one
// per policy, and report goodput and safety figures with b.ReportMetric.
// Run them with -benchtime 1x (.ci/bench-load does). With FRONTDOOR_LOAD_OUT
// set to a directory, each run's JSON and HTML reports are written there.

var policies = []stages.Policy{policyOf("frontdoor"), policyOf("unbounded"), policyOf("semaphore"), policyOf("release-on-cancel")}

// policyOf is the policy named name (stages.Policy.Set).
func policyOf(name string) stages.Policy {
	var p stages.Policy
	if err := p.Set(name); err != nil {
		panic(err)
	}
	return p
}

// Stages of the goodput benchmark: 4 slots in each stage, each backend
// running 4 jobs at full speed (processor sharing beyond), model 100ms +
// 3x10ms, synthesis 50ms + 4x20ms: about 130ms each, so about 30 turns per
// second through the pipeline on paper. The benchmark measures it instead
// (closed loop) and offers multiples of the measured figure.
const (
	benchSlots  = 4
	benchWindow = 4 * time.Second
)

var benchStub = stub.Settings{ModelDelay: 100 * time.Millisecond, TokenDelay: 10 * time.Millisecond, Tokens: 4,
	SynthDelay: 50 * time.Millisecond, FrameCount: 5, FrameDelay: 20 * time.Millisecond, CleanupDelay: 20 * time.Millisecond}

func writeReports(b *testing.B, r *load.Report) {
	dir := os.Getenv("FRONTDOOR_LOAD_OUT")
	if dir == "" {
		return
	}
	base := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_"))
	for ext, write := range map[string]func(*os.File) error{
		".json": func(f *os.File) error { return r.WriteJSON(f) },
		".html": func(f *os.File) error { return r.WriteHTML(f) },
	} {
		f, err := os.Create(base + ext)
		if err != nil {
			b.Fatal(err)
		}
		if err := write(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkGoodput measures the pipeline's capacity, then offers 0.5x to
// 10x of it to each policy.
func BenchmarkGoodput(b *testing.B) {
	var capacity float64
	b.Run("capacity", func(b *testing.B) {
		for b.Loop() {
			capacity = measureCapacity(b)
		}
		b.ReportMetric(capacity, "turns/s")
	})
	if capacity <= 0 {
		b.Fatal("no capacity measured")
	}
	for _, x := range []float64{0.5, 1, 2, 5, 10} {
		for _, p := range policies {
			b.Run(fmt.Sprintf("x%v/%s", x, p), func(b *testing.B) {
				for b.Loop() {
					goodputRun(b, x, p, capacity)
				}
			})
		}
	}
}

// measureCapacity is the pipeline's saturated throughput: 16 callers
// speaking 30 turns back to back keep both stages full (4 running and more
// queued in each); completed turns per second is the capacity.
func measureCapacity(b *testing.B) float64 {
	ts := startServer(b, serverOpts{policy: policyOf("frontdoor"),
		session: stages.Limits{Slots: 100, Waiting: 10, MaxAge: 5 * time.Second},
		model:   stages.Limits{Slots: benchSlots, Waiting: 32, MaxAge: 30 * time.Second},
		synt:    stages.Limits{Slots: benchSlots, Waiting: 32, MaxAge: 30 * time.Second},
		stub:    benchStub, capacity: benchSlots, cleanupTimeout: 2 * time.Second,
	})
	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: 16, Rate: 1000,
		Arrival: load.Burst, BurstSize: 16, Turns: 30, Deadline: 30 * time.Second, Duration: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return r.Goodput.CompletedPerSecond
}

// goodputRun offers x times capacity for benchWindow. The age limits (from
// the turn's birth) let a turn admitted at the limit still have its first
// audio within the 1s deadline: model admitted by 300ms, ~140ms of model,
// synthesis admitted by 800ms, 50ms to its first frame. Waiting happens in
// the model queue (~capacity x age limit); the synthesis queue is twice
// that, so that a turn the model finished is not refused for room while its
// age still lets it wait (as .ci/bench-load).
func goodputRun(b *testing.B, x float64, p stages.Policy, capacity float64) {
	ts := startServer(b, serverOpts{policy: p,
		session: stages.Limits{Slots: 5000, Waiting: 100, MaxAge: 5 * time.Second},
		model:   stages.Limits{Slots: benchSlots, Waiting: 8, MaxAge: 300 * time.Millisecond},
		synt:    stages.Limits{Slots: benchSlots, Waiting: 16, MaxAge: 800 * time.Millisecond},
		stub:    benchStub, capacity: benchSlots, cleanupTimeout: 2 * time.Second,
	})
	rate := x * capacity
	callers := int(rate * benchWindow.Seconds())
	r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: callers, Rate: rate,
		Turns: 1, Deadline: time.Second, Patience: 3 * time.Second, Duration: 30 * time.Second, Seed: 7})
	if err != nil {
		b.Fatal(err)
	}
	r.Config.Label = p.String()
	writeReports(b, r)
	target := min(float64(r.Turns.Offered), capacity*benchWindow.Seconds())
	b.ReportMetric(100*float64(r.Goodput.Good)/target, "good%ofmin")
	b.ReportMetric(float64(r.Goodput.Good), "good")
	b.ReportMetric(float64(r.Turns.Offered), "offered")
	b.ReportMetric(float64(r.Goodput.Late), "late")
	b.ReportMetric(float64(r.Goodput.Refused), "refused")
	b.ReportMetric(float64(r.Goodput.Untyped), "untyped")
	b.ReportMetric(float64(r.Callers.ByEnd[load.EndAbandoned]), "abandoned")
	b.ReportMetric(float64(time.Duration(r.FirstAud.P99).Milliseconds()), "p99ttfa_ms")
	b.ReportMetric(float64(time.Duration(r.Generator.Lag.P99).Milliseconds()), "p99lag_ms")
	b.ReportMetric(float64(ts.Model.Capacity().MaxRunning()), "maxmodel")
	if !r.Callers.Balanced || !r.Turns.Balanced {
		b.Errorf("ledger does not balance")
	}
	for _, w := range r.Warnings {
		b.Logf("warning: %s", w)
	}
}

// BenchmarkOverAdmission barges in on every reply while the backends take
// 300ms to stop: the most synthesis jobs running at once against the slots.
func BenchmarkOverAdmission(b *testing.B) {
	for _, p := range []stages.Policy{policyOf("frontdoor"), policyOf("release-on-cancel")} {
		b.Run(p.String(), func(b *testing.B) {
			for b.Loop() {
				st := benchStub
				st.FrameCount, st.CleanupDelay = 50, 300*time.Millisecond
				ts := startServer(b, serverOpts{policy: p,
					session: stages.Limits{Slots: 1000, Waiting: 100, MaxAge: 5 * time.Second},
					model:   stages.Limits{Slots: benchSlots, Waiting: 16, MaxAge: 2 * time.Second},
					synt:    stages.Limits{Slots: benchSlots, Waiting: 16, MaxAge: 2 * time.Second},
					stub:    st, capacity: 1000, cleanupTimeout: 2 * time.Second,
				})
				r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: 40, Rate: 20,
					Turns: 3, Think: 50 * time.Millisecond, BargeIn: 1, BargeAfter: 100 * time.Millisecond,
					Deadline: 2 * time.Second, Patience: 5 * time.Second, Duration: 30 * time.Second, Seed: 3})
				if err != nil {
					b.Fatal(err)
				}
				r.Config.Label = p.String()
				writeReports(b, r)
				b.ReportMetric(float64(benchSlots), "slots")
				b.ReportMetric(float64(ts.Synth.MaxRunning()), "maxsynth")
				b.ReportMetric(float64(ts.Model.MaxRunning()), "maxmodel")
				b.ReportMetric(float64(r.BargeIn.Sent), "bargeins")
				b.ReportMetric(float64(r.BargeIn.StaleAfter), "staleafter")
			}
		})
	}
}

// BenchmarkBargeIn: active calls that all barge in during replies; the
// server's time from barge_in to its last old-generation write, and frames
// of an old generation after `interrupted` (FRONTDOOR_BENCH_CALLS calls,
// default 200).
func BenchmarkBargeIn(b *testing.B) {
	calls := 200
	if v, err := strconv.Atoi(os.Getenv("FRONTDOOR_BENCH_CALLS")); err == nil && v > 0 {
		calls = v
	}
	b.Run(fmt.Sprintf("calls%d", calls), func(b *testing.B) {
		for b.Loop() {
			st := benchStub
			st.FrameCount = 50
			ts := startServer(b, serverOpts{
				session: stages.Limits{Slots: calls, Waiting: 10, MaxAge: 5 * time.Second},
				model:   stages.Limits{Slots: calls, Waiting: calls, MaxAge: 5 * time.Second},
				synt:    stages.Limits{Slots: calls, Waiting: calls, MaxAge: 5 * time.Second},
				stub:    st, capacity: calls, cleanupTimeout: 2 * time.Second,
			})
			r, err := load.Run(context.Background(), load.Config{Target: ts.URL, Callers: calls, Rate: float64(calls) / 2,
				Turns: 3, Think: 100 * time.Millisecond, BargeIn: 0.7, BargeAfter: 300 * time.Millisecond,
				Deadline: 2 * time.Second, Duration: 60 * time.Second, Seed: 5})
			if err != nil {
				b.Fatal(err)
			}
			writeReports(b, r)
			m := r.Server.BargeIn
			b.ReportMetric(float64(m.Count), "bargeins")
			b.ReportMetric(m.P99Max, "p99lastwrite_le_ms")
			b.ReportMetric(float64(r.BargeIn.StaleAfter), "staleafter")
			b.ReportMetric(float64(time.Duration(r.BargeIn.Latency.P99).Microseconds())/1000, "p99interrupted_ms")
		}
	})
}
