package pocketsphinx

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// BenchmarkRecognize recognizes a spoken sentence per op. Recognition starts
// when the utterance has ended, so ms/op is the time from end of speech to
// text; rtf is that time over the speech's duration (real-time factor).
func BenchmarkRecognize(b *testing.B) {
	r := newRecognizer(b, Options{})
	for _, c := range []struct {
		name string
		rate int
	}{{"22kHz", 22050}, {"8kHz-ulaw", 8000}} {
		b.Run(c.name, func(b *testing.B) {
			a := speak(b, "Please call me back tomorrow morning.")
			if c.rate == 8000 {
				a = phone(b, a)
			}
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if _, err := r.Recognize(context.Background(), a); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per.Milliseconds()), "ms/utterance")
			b.ReportMetric(per.Seconds()/a.Duration().Seconds(), "rtf")
			b.ReportMetric(a.Duration().Seconds(), "speech-s")
		})
	}
}

// BenchmarkStartup recognizes half a second of silence: nearly all of it is
// the process start and the model load, the cost per utterance that a
// library binding (cgo, libpocketsphinx) would save.
func BenchmarkStartup(b *testing.B) {
	r := newRecognizer(b, Options{})
	a := backend.Audio{Rate: Rate, Samples: make([]int16, Rate/2)}
	for b.Loop() {
		if _, err := r.Recognize(context.Background(), a); err != nil {
			b.Fatal(err)
		}
	}
}
