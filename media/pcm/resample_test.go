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

// eachKernel runs f once per polyphase kernel this machine has: the vector
// ones where the CPU has them, and the portable one always.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, k := range kernels() {
		k.use()
		t.Run(k.name, f)
	}
	kernels()[0].use()
}

type kernel struct {
	name string
	use  func()
}

// kernels lists the kernels this machine can run, its default first.
func kernels() []kernel { return kernelList }

// kernelList is made at init, before any test switches kernels.
var kernelList = func() []kernel {
	var ks []kernel
	if useAVX512 {
		ks = append(ks, kernel{"avx512", func() { useAVX2, useAVX512 = true, true }})
	}
	if useAVX2 {
		ks = append(ks, kernel{"avx2", func() { useAVX2, useAVX512 = true, false }})
	}
	return append(ks, kernel{"go", func() { useAVX2, useAVX512 = false, false }})
}()

func TestResamplePassband(t *testing.T) { eachKernel(t, testResamplePassband) }

func testResamplePassband(t *testing.T) {
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

func TestResampleAliasing(t *testing.T) { eachKernel(t, testResampleAliasing) }

func testResampleAliasing(t *testing.T) {
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
func TestResampleChunked(t *testing.T) { eachKernel(t, testResampleChunked) }

func testResampleChunked(t *testing.T) {
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

// TestResampleMatchesReference compares the resampler with the one it
// replaced (refResampler: per-resampler design, one scalar dot product per
// output): the same filter, so only float32 rounding may differ, by at most
// one step of int16 and on few samples.
func TestResampleMatchesReference(t *testing.T) { eachKernel(t, testResampleMatchesReference) }

func testResampleMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range append(ratePairs, [2]int{8000, 8000}, [2]int{44100, 48000}, [2]int{11025, 16000}) {
		in := make([]int16, 9000)
		for i := range in {
			// A loud tone under noise, clipping now and then: rounding and
			// saturation both get exercised.
			in[i] = Clamp16(30000*math.Sin(float64(i)*0.05) + float64(rng.IntN(16000)-8000))
		}
		r, err := NewResampler(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		ref, err := newRefResampler(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		var got, want []int16
		for rest := in; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(p[0]/40))
			got = r.Resample(got, rest[:k])
			want = ref.Resample(want, rest[:k])
			rest = rest[k:]
		}
		got, want = r.Flush(got), ref.Flush(want)
		if len(got) != len(want) {
			t.Fatalf("%d -> %d: %d samples, reference %d", p[0], p[1], len(got), len(want))
		}
		differ := 0
		for i := range got {
			if d := int(got[i]) - int(want[i]); d != 0 {
				differ++
				if d < -1 || d > 1 {
					t.Fatalf("%d -> %d: sample %d is %d, reference %d", p[0], p[1], i, got[i], want[i])
				}
			}
		}
		if differ > len(got)/100 {
			t.Errorf("%d -> %d: %d of %d samples differ from the reference by one", p[0], p[1], differ, len(got))
		}
	}
}

// TestPolyphaseKernels compares the vector kernels' sums with the portable
// kernel's before rounding, across phases, steps and row lengths.
func TestPolyphaseKernels(t *testing.T) {
	ks := kernels()
	defer ks[0].use()
	if len(ks) == 1 {
		t.Skip("no vector kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range [][2]int{{1, 6}, {2, 1}, {6, 1}, {1, 2}, {2, 3}, {160, 441}, {147, 320}, {3, 2}} {
		f := filterFor(p[0], p[1])
		x := make([]float32, 4096)
		for i := range x {
			x[i] = float32(rng.IntN(65536) - 32768)
		}
		for _, count := range []int{1, 2, 7, 100} {
			for _, phase := range []int{0, f.l / 2, f.l - 1} {
				last := phase + (count-1)*f.m
				if last/f.l+f.n > len(x) {
					continue
				}
				port := make([]float32, count)
				polyphaseGo(port, x, f.taps, f.n, f.l, phase, f.m/f.l, f.m%f.l)
				for _, k := range ks[:len(ks)-1] {
					k.use()
					vec := make([]float32, count)
					polyphase(vec, x, f, phase)
					for i := range vec {
						if d := math.Abs(float64(vec[i] - port[i])); d > 1e-2 {
							t.Fatalf("%s, L/M %d/%d, phase %d, output %d of %d: %v, portable %v", k.name, p[0], p[1], phase, i, count, vec[i], port[i])
						}
					}
				}
			}
		}
	}
}

// TestResampleAllocs: a resampler that has seen a 20 ms frame allocates
// nothing for the next one into a dst with room.
func TestResampleAllocs(t *testing.T) {
	for _, p := range ratePairs {
		r, _ := NewResampler(p[0], p[1])
		src := tone(p[0], 440, 8000, p[0]/50)
		dst := make([]int16, 0, p[1]/25)
		dst = r.Resample(dst, src)
		if n := testing.AllocsPerRun(100, func() { dst = r.Resample(dst[:0], src) }); n != 0 {
			t.Errorf("%d -> %d: %v allocations per frame", p[0], p[1], n)
		}
	}
}

// benchResample measures one 20 ms frame through the resampler. Sub-benchmarks
// run the previous implementation (ref) and each kernel this machine has
// (avx512, avx2, go) side by side in one invocation, so that the shared
// machine's load falls on all of them alike.
func benchResample(b *testing.B, in, out int) {
	src := tone(in, 440, 8000, in/50) // 20 ms chunks
	b.Run("ref", func(b *testing.B) {
		r, err := newRefResampler(in, out)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]int16, 0, out/25)
		b.SetBytes(int64(len(src) * 2))
		for b.Loop() {
			dst = r.Resample(dst[:0], src)
		}
	})
	ks := kernels()
	defer ks[0].use()
	for _, k := range ks {
		b.Run(k.name, func(b *testing.B) {
			k.use()
			r, err := NewResampler(in, out)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]int16, 0, out/25)
			b.SetBytes(int64(len(src) * 2))
			for b.Loop() {
				dst = r.Resample(dst[:0], src)
			}
		})
	}
}

func BenchmarkResample48kTo8k(b *testing.B)   { benchResample(b, 48000, 8000) }
func BenchmarkResample8kTo48k(b *testing.B)   { benchResample(b, 8000, 48000) }
func BenchmarkResample16kTo8k(b *testing.B)   { benchResample(b, 16000, 8000) }
func BenchmarkResample8kTo16k(b *testing.B)   { benchResample(b, 8000, 16000) }
func BenchmarkResample22050To8k(b *testing.B) { benchResample(b, 22050, 8000) }
func BenchmarkResample24kTo16k(b *testing.B)  { benchResample(b, 24000, 16000) }

// TestRoundedAsClamp16: the resampler's rounding of its sums is Clamp16's,
// exactly, halves and saturation included.
func TestRoundedAsClamp16(t *testing.T) { eachKernel(t, testRoundedAsClamp16) }

func testRoundedAsClamp16(t *testing.T) {
	acc := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997,
		1e-30, -1e-30, 32766.5, 32767, 32767.49, 32767.5, 40000, -32767.5, -32768, -32768.5, -40000, 1e9, -1e9,
		12345.5, -12345.5, 0.50000006, 99.99999}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		acc = append(acc, float32(rng.NormFloat64()*20000), float32(rng.IntN(80000)-40000)+0.5)
	}
	for _, off := range []int{0, 1, 3} { // the vector part and the scalar rest
		got := appendRounded(nil, acc[off:])
		for i, a := range acc[off:] {
			if want := Clamp16(float64(a)); got[i] != want {
				t.Fatalf("offset %d: %v rounded to %d, Clamp16 %d", off, a, got[i], want)
			}
		}
	}
	s := []int16{0, 1, -1, math.MaxInt16, math.MinInt16, 1234, -4321, 7, 8, 9, 10}
	d := make([]float32, len(s))
	toFloat(d, s)
	for i := range s {
		if d[i] != float32(s[i]) {
			t.Fatalf("toFloat(%d) = %v", s[i], d[i])
		}
	}
}
