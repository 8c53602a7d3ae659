package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// BenchmarkPacerJitter releases 250 frames (5 s of 20 ms frames) per
// iteration and reports how late frames left: the pacing jitter.
func BenchmarkPacerJitter(b *testing.B) {
	var st Stats
	for b.Loop() {
		p := New(Config{FrameBytes: 160})
		_ = p.Write(make([]byte, 160*250))
		n := 0
		stop := errors.New("stop")
		_ = p.Run(context.Background(), func(Event) error {
			if n++; n == 250 {
				return stop
			}
			return nil
		})
		st = p.Stats()
	}
	b.ReportMetric(float64(st.Mean)/float64(time.Microsecond), "mean-late-µs")
	b.ReportMetric(float64(st.P50)/float64(time.Microsecond), "p50-late-µs")
	b.ReportMetric(float64(st.P99)/float64(time.Microsecond), "p99-late-µs")
	b.ReportMetric(float64(st.Max)/float64(time.Microsecond), "max-late-µs")
}
