package pcm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func tone(rate int, hz, amp float64, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = Clamp16(amp * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return s
}

// steadyDB is the level of the middle of out relative to a sine of amplitude amp.
func steadyDB(out []int16, amp float64) float64 {
	mid := out[len(out)/4 : 3*len(out)/4]
	return 20 * math.Log10(RMS(mid)*math.Sqrt2/amp)
}

var ratePairs = [][2]int{
	{48000, 8000}, {8000, 48000}, {16000, 8000}, {8000, 16000}, {24000, 16000},
	{16000, 24000}, {48000, 16000}, {48000, 24000}, {22050, 8000}, {22050, 16000},
	{22050, 24000}, {22050, 48000}, {44100, 8000},
}

func TestResamplePassband(t *testing.T) {
	const amp = 10000
	for _, p := range ratePairs {
		in := tone(p[0], 1000, amp, p[0]/2) // 0.5 s
		out, err := Resample(in, p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if db := steadyDB(out, amp); math.Abs(db) > 1 {
			t.Errorf("%d -> %d: 1 kHz tone at %.2f dB, want within 1 dB", p[0], p[1], db)
		}
	}
}

func TestResampleAliasing(t *testing.T) {
	tests := []struct {
		in, out int
		hz      float64
	}{
		{48000, 8000, 6000}, // would fold to 2 kHz
		{48000, 8000, 4500}, // just above the new Nyquist
		{48000, 16000, 10000},
		{22050, 8000, 6000},
		{22050, 16000, 9500},
		{16000, 8000, 5000},
	}
	const amp = 20000
	for _, tt := range tests {
		out, err := Resample(tone(tt.in, tt.hz, amp, tt.in/2), tt.in, tt.out)
		if err != nil {
			t.Fatal(err)
		}
		db := steadyDB(out, amp)
		t.Logf("%d -> %d: %.0f Hz at %.1f dB", tt.in, tt.out, tt.hz, db)
		if db > -40 {
			t.Errorf("%d -> %d: %.0f Hz tone leaks at %.1f dB, want <= -40 dB", tt.in, tt.out, tt.hz, db)
		}
	}
}

// TestResampleChunked checks that chunk boundaries change nothing and that
// no sample is dropped: ceil(n*out/in) samples come out in total.
func TestResampleChunked(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range append(ratePairs, [2]int{16000, 16000}) {
		n := 12345
		in := make([]int16, n)
		for i := range in {
			in[i] = int16(rng.IntN(20000) - 10000)
		}
		whole, err := Resample(in, p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		wantLen := (n*p[1] + p[0] - 1) / p[0]
		if len(whole) != wantLen {
			t.Errorf("%d -> %d: %d samples out of %d, want %d", p[0], p[1], len(whole), n, wantLen)
		}
		r, _ := NewResampler(p[0], p[1])
		var chunked []int16
		for rest := in; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(500))
			chunked = r.Resample(chunked, rest[:k])
			rest = rest[k:]
		}
		chunked = r.Flush(chunked)
		if !slices.Equal(whole, chunked) {
			t.Errorf("%d -> %d: chunked output differs from one-shot", p[0], p[1])
		}
	}
}

func TestResamplerErrors(t *testing.T) {
	for _, p := range [][2]int{{0, 8000}, {8000, -1}, {44101, 8000}} {
		if _, err := NewResampler(p[0], p[1]); !errors.Is(err, ErrRatio) {
			t.Errorf("NewResampler(%d, %d) error = %v, want ErrRatio", p[0], p[1], err)
		}
	}
}

func benchResample(b *testing.B, in, out int) {
	r, err := NewResampler(in, out)
	if err != nil {
		b.Fatal(err)
	}
	src := tone(in, 440, 8000, in/50) // 20 ms chunks
	dst := make([]int16, 0, out/25)
	b.SetBytes(int64(len(src) * 2))
	for b.Loop() {
		dst = r.Resample(dst[:0], src)
	}
}

func BenchmarkResample48kTo8k(b *testing.B)   { benchResample(b, 48000, 8000) }
func BenchmarkResample8kTo48k(b *testing.B)   { benchResample(b, 8000, 48000) }
func BenchmarkResample16kTo8k(b *testing.B)   { benchResample(b, 16000, 8000) }
func BenchmarkResample8kTo16k(b *testing.B)   { benchResample(b, 8000, 16000) }
func BenchmarkResample22050To8k(b *testing.B) { benchResample(b, 22050, 8000) }
func BenchmarkResample24kTo16k(b *testing.B)  { benchResample(b, 24000, 16000) }
