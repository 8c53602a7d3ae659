package listen

import (
	"fmt"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
)

// BenchmarkFeed is one caller frame (20 ms of PCM16 at 16 kHz, quiet)
// through a call's listener: decoding, VAD and pre-roll. With calls
// listeners taking frames in turn, each frame finds its call's state as
// a server with that many calls does: long out of the nearest caches
// (docs/BENCHMARKS.md, section 6).
func BenchmarkFeed(b *testing.B) {
	frame := make([]byte, 640)
	for i := 0; i < len(frame); i += 2 {
		frame[i] = byte(i % 17) // noise well under the threshold: no speech
	}
	for _, calls := range []int{1, 500} {
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			ls := make([]*Listener, calls)
			for i := range ls {
				l, err := New(media.Format{Encoding: media.PCM16, SampleRate: 16000})
				if err != nil {
					b.Fatal(err)
				}
				ls[i] = l
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, _, err := ls[i].Feed(frame); err != nil {
					b.Fatal(err)
				}
				i++
				if i == calls {
					i = 0
				}
			}
		})
	}
}
