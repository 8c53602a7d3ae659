package espeak

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// BenchmarkSynthesizeSentence runs espeak-ng for one spoken sentence:
// first-chunk latency and real-time factor (seconds of audio per second).
func BenchmarkSynthesizeSentence(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	var first, audio time.Duration
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		seen := false
		err := s.Synthesize(context.Background(), "Thanks for calling, how can I help you today?", func(a backend.Audio) error {
			if !seen {
				first += time.Since(t0)
				seen = true
			}
			audio += a.Duration()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms-to-first-chunk")
	b.ReportMetric(audio.Seconds()/time.Since(start).Seconds(), "x-realtime")
}
