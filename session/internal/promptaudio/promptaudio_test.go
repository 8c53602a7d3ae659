package promptaudio

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

func promptTone(rate int, d time.Duration) backend.Audio {
	s := make([]int16, int(d.Seconds()*float64(rate)))
	for i := range s {
		s[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return backend.Audio{Rate: rate, Samples: s}
}

// TestEncodedPromptFrames: the shared encoding of prompt audio has the
// frames, durations and audio_end duration that audioOut's own path (a
// resampler over the whole rendering, then a frame encoded at a time)
// gives, in every format and at every frame length (hello.audio.frame_ms:
// span 20 ms frames), sliced from the one buffer.
func TestEncodedPromptFrames(t *testing.T) {
	for _, tc := range []struct {
		in  int
		out media.Format
	}{
		{16000, media.Format{}},
		{16000, media.Format{Encoding: media.PCM16, SampleRate: 16000}},
		{16000, media.Format{Encoding: media.PCM16, SampleRate: 8000}},
		{22050, media.Format{Encoding: media.Mulaw, SampleRate: 8000}},
		{24000, media.Format{Encoding: media.Alaw, SampleRate: 8000}},
		{8000, media.Format{Encoding: media.PCM16, SampleRate: 48000}},
	} {
		t.Run(fmt.Sprint(tc.in, tc.out), func(t *testing.T) {
			a := promptTone(tc.in, 1234*time.Millisecond)
			p, err := Encode(a, orPCM(tc.out.Encoding), orRate(tc.out.SampleRate, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			// audioOut's way.
			enc, rate := orPCM(tc.out.Encoding), orRate(tc.out.SampleRate, tc.in)
			s := a.Samples
			if rate != a.Rate {
				rs, err := pcm.NewResampler(a.Rate, rate)
				if err != nil {
					t.Fatal(err)
				}
				s = rs.Flush(rs.Resample(nil, s))
			}
			for _, span := range []int{1, 3, 6} {
				n := span * (rate / 50)
				var want [][]byte
				for i := 0; i < len(s); i += n {
					want = append(want, EncodeFrame(nil, enc, s[i:min(i+n, len(s))]))
				}
				if p.Frames(span) != len(want) {
					t.Fatalf("span %d: %d frames, want %d", span, p.Frames(span), len(want))
				}
				for i, w := range want {
					b, us := p.At(i, span)
					if !bytes.Equal(b, w) {
						t.Fatalf("span %d: frame %d differs", span, i)
					}
					if cap(b) != len(b) {
						t.Fatalf("span %d: frame %d: cap %d, len %d: an append would write into the next frame", span, i, cap(b), len(b))
					}
					if wus := int64(len(s[i*n:min((i+1)*n, len(s))])) * 1e6 / int64(rate); us != wus {
						t.Fatalf("span %d: frame %d: %d µs, want %d", span, i, us, wus)
					}
				}
			}
			if p.SynthUS != int64(len(a.Samples))*1e6/int64(a.Rate) {
				t.Fatalf("synthUS %d", p.SynthUS)
			}
			if p.Enc != enc || p.Rate != rate {
				t.Fatalf("format %s/%d, want %s/%d", p.Enc, p.Rate, enc, rate)
			}
		})
	}
}

func orPCM(e media.Encoding) media.Encoding {
	if e == "" {
		return media.PCM16
	}
	return e
}

func orRate(r, in int) int {
	if r == 0 {
		return in
	}
	return r
}

// TestEncodedPromptShared: one rendering in one format is encoded once;
// another format, or another rendering of equal samples, is its own.
func TestEncodedPromptShared(t *testing.T) {
	var pc Cache
	pc.m = map[key]*Prompt{}
	a := promptTone(16000, time.Second)
	f := media.Format{Encoding: media.PCM16, SampleRate: 16000}
	p1, _ := pc.Get(a, f)
	p2, _ := pc.Get(a, f)
	if p1 != p2 {
		t.Fatal("the same rendering was encoded twice")
	}
	if p3, _ := pc.Get(a, media.Format{Encoding: media.Mulaw, SampleRate: 8000}); p3 == p1 {
		t.Fatal("another format shared an encoding")
	}
	b := backend.Audio{Rate: a.Rate, Samples: append([]int16(nil), a.Samples...)}
	if p4, _ := pc.Get(b, f); p4 == p1 {
		t.Fatal("another rendering shared an encoding")
	}
	if len(pc.order) != 3 || pc.bytes != 2*32000+8000 {
		t.Fatalf("%d entries, %d bytes", len(pc.order), pc.bytes)
	}
	runtime.KeepAlive(a.Samples) // else its encodings may go at the last insert
	runtime.KeepAlive(b.Samples)
}

// BenchmarkPromptAudio is one 20 ms frame of a 5 s prompt queued for a
// call in its format (16 kHz PCM16, or 8 kHz µ-law, from a 16 kHz
// rendering), the queue itself left out: "encode" is what each call did
// before (audioOut: a resampler over the rendering when rates differ, then
// an encoding and an allocation per frame), "shared" the frames sliced from
// the one encoding every call uses.
func BenchmarkPromptAudio(b *testing.B) {
	a := promptTone(16000, 5*time.Second)
	frames := 250
	for _, f := range []media.Format{{Encoding: media.PCM16, SampleRate: 16000}, {Encoding: media.Mulaw, SampleRate: 8000}} {
		b.Run(fmt.Sprintf("%s-%d/encode", f.Encoding, f.SampleRate), func(b *testing.B) {
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				s := a.Samples
				if f.SampleRate != a.Rate {
					rs, _ := pcm.NewResampler(a.Rate, f.SampleRate)
					s = rs.Flush(rs.Resample(nil, s))
				}
				n := f.SampleRate / 50
				for i := 0; i < len(s); i += n {
					sink += len(EncodeFrame(nil, f.Encoding, s[i:min(i+n, len(s))]))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
			_ = sink
		})
		b.Run(fmt.Sprintf("%s-%d/shared", f.Encoding, f.SampleRate), func(b *testing.B) {
			var pc Cache
			pc.m = map[key]*Prompt{}
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				p, _ := pc.Get(a, f)
				for i := range p.Frames(1) {
					_, us := p.At(i, 1)
					sink += int(us)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
			_ = sink
		})
	}
}

// TestEncodedPromptDropsGone: the encoding of a rendering nothing holds any
// more is dropped at the next insert.
func TestEncodedPromptDropsGone(t *testing.T) {
	var pc Cache
	pc.m = map[key]*Prompt{}
	f := media.Format{Encoding: media.PCM16, SampleRate: 16000}
	func() {
		a := promptTone(16000, time.Second)
		if _, err := pc.Get(a, f); err != nil {
			t.Fatal(err)
		}
	}()
	runtime.GC()
	runtime.GC()
	b := promptTone(16000, time.Second/2)
	if _, err := pc.Get(b, f); err != nil {
		t.Fatal(err)
	}
	if len(pc.order) != 1 || len(pc.m) != 1 || pc.bytes != 16000 {
		t.Fatalf("%d entries (%d in the map), %d bytes: the gone rendering's encoding was kept", len(pc.order), len(pc.m), pc.bytes)
	}
	runtime.KeepAlive(b.Samples)
}
