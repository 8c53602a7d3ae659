package pcm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// ErrRatio reports a pair of rates whose reduced ratio needs more filter
// phases than the resampler keeps (the numerator over 1024).
var ErrRatio = errors.New("pcm: unsupported resampling ratio")

const (
	zeroCrossings = 16   // sinc lobes kept on each side of the centre
	rolloff       = 0.9  // cutoff as a fraction of the lower Nyquist frequency
	kaiserBeta    = 8.0  // about 80 dB stopband
	maxPhases     = 1024 // bounds the table at rates like 44100 -> 8000 (160)
	// maxCachedFilters bounds the shared tables: rates come from
	// synthesizers and callers' formats, and an odd pair still works, with a
	// table of its own, once the cache is full.
	maxCachedFilters = 64
)

// filter is the polyphase table of one reduced ratio L/M: designed once per
// ratio and shared, read-only, by every Resampler of that ratio. Designing it
// costs one Bessel series per tap (22050 -> 8000 Hz has 160 phases of 98
// taps), which a call would otherwise pay before its first frame.
type filter struct {
	l, m int
	half int // taps each side of the centre in the design, in input samples
	n    int // taps stored per phase: 2*half rounded up to a multiple of lanes
	// off is how far before the output's centre sample a phase's first
	// stored tap sits: the window of an output centred on input c is
	// x[c-off : c-off+n], and it ends at c+half.
	off  int
	taps []float32 // l rows of n; row p is the phase p/L
}

type ratio struct{ l, m int }

var filters struct {
	sync.Mutex
	m map[ratio]*filter
}

func filterFor(l, m int) *filter {
	k := ratio{l, m}
	filters.Lock()
	f := filters.m[k]
	filters.Unlock()
	if f != nil {
		return f
	}
	f = design(l, m) // outside the lock: up to milliseconds for many phases
	filters.Lock()
	defer filters.Unlock()
	if old := filters.m[k]; old != nil {
		return old
	}
	if filters.m == nil {
		filters.m = make(map[ratio]*filter)
	}
	if len(filters.m) < maxCachedFilters {
		filters.m[k] = f
	}
	return f
}

// design builds the polyphase table of a Kaiser-windowed sinc whose cutoff
// sits below the lower of the two Nyquist frequencies. Every phase is
// normalised to unity DC gain.
func design(l, m int) *filter {
	fc := 0.5 * rolloff * math.Min(1, float64(l)/float64(m)) // cycles per input sample
	half := int(math.Ceil(zeroCrossings / (2 * fc)))
	n := (2*half + lanes - 1) / lanes * lanes
	f := &filter{l: l, m: m, half: half, n: n, off: n - half - 1, taps: make([]float32, l*n)}
	pad := n - 2*half
	i0b := besselI0(kaiserBeta)
	vals := make([]float64, 2*half)
	for p := range l {
		clear(vals)
		var sum float64
		for j := range vals {
			k := j - half + 1                         // input offset from the centre sample
			tau := float64(p)/float64(l) - float64(k) // distance from the output instant
			x := tau / float64(half)
			if x <= -1 || x >= 1 {
				continue
			}
			w := besselI0(kaiserBeta*math.Sqrt(1-x*x)) / i0b
			vals[j] = 2 * fc * sinc(2*fc*tau) * w
			sum += vals[j]
		}
		row := f.taps[p*n+pad : (p+1)*n]
		for j, v := range vals {
			row[j] = float32(v / sum)
		}
	}
	return f
}

// Resampler converts a stream of mono PCM16 samples from one rate to another.
// It is stateful: feeding a signal in chunks of any size gives exactly the same
// output as feeding it at once, so frame boundaries do not click. Call Flush at
// the end of a stream to drain the filter's look-ahead. A Resampler is not safe
// for concurrent use.
type Resampler struct {
	in, out int
	f       *filter   // nil when the rates are equal
	buf     []float32 // input history; buf[pos/L] is the next output's centre
	pos     int       // next output position in 1/L input samples
	acc     []float32 // one drain's outputs before rounding, kept between calls
}

// NewResampler returns a resampler from inRate to outRate samples per second.
func NewResampler(inRate, outRate int) (*Resampler, error) {
	if inRate <= 0 || outRate <= 0 {
		return nil, fmt.Errorf("pcm: rates %d -> %d: %w", inRate, outRate, ErrRatio)
	}
	g := gcd(inRate, outRate)
	l, m := outRate/g, inRate/g
	if l > maxPhases {
		return nil, fmt.Errorf("pcm: rates %d -> %d need %d phases: %w", inRate, outRate, l, ErrRatio)
	}
	r := &Resampler{in: inRate, out: outRate}
	if inRate != outRate {
		r.f = filterFor(l, m)
		// Room for the history and a 20 ms frame at 48 kHz; more grows once.
		r.buf = make([]float32, 0, r.f.off+r.f.half+1024)
	}
	r.Reset()
	return r, nil
}

// Reset forgets all buffered input, as at the start of a new stream.
func (r *Resampler) Reset() {
	if r.f == nil {
		return
	}
	// The zeros in front stand for the silence before the stream: the first
	// output is centred on the first input sample.
	r.buf = r.buf[:r.f.off]
	clear(r.buf)
	r.pos = r.f.off * r.f.l
}

// Rates returns the input and output sample rates.
func (r *Resampler) Rates() (in, out int) { return r.in, r.out }

// Resample appends to dst the output for the next chunk of input src. It
// allocates nothing once dst has room and the chunks are no longer than
// the largest seen before.
func (r *Resampler) Resample(dst, src []int16) []int16 {
	if r.f == nil {
		return append(dst, src...)
	}
	n := len(r.buf)
	r.buf = slices.Grow(r.buf, len(src))[:n+len(src)]
	toFloat(r.buf[n:], src)
	return r.drain(dst)
}

// Flush appends the output still held back by the filter's look-ahead, as if
// the input were followed by silence, and resets the resampler.
func (r *Resampler) Flush(dst []int16) []int16 {
	if r.f == nil {
		return dst
	}
	n := len(r.buf)
	r.buf = slices.Grow(r.buf, r.f.half)[:n+r.f.half]
	clear(r.buf[n:])
	dst = r.drain(dst)
	r.Reset()
	return dst
}

func (r *Resampler) drain(dst []int16) []int16 {
	f := r.f
	// An output centred on input c needs input up to c+half: the outputs at
	// positions below limit are ready.
	if limit := (len(r.buf) - f.half) * f.l; r.pos < limit {
		count := (limit - r.pos + f.m - 1) / f.m
		if cap(r.acc) < count {
			r.acc = make([]float32, count)
		}
		acc := r.acc[:count]
		base := r.pos / f.l
		polyphase(acc, r.buf[base-f.off:], f, r.pos%f.l)
		r.pos += count * f.m
		dst = appendRounded(dst, acc)
	}
	if drop := r.pos/f.l - f.off; drop > 0 {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.pos -= drop * f.l
	}
	return dst
}

// polyphase sets out[i] to output i of the filter f over x, where output 0
// is of phase p with its window at x[0:f.n] and each next output is M/L
// input samples later. x must hold every output's window.
func polyphase(out, x []float32, f *filter, p int) {
	if len(out) == 0 {
		return
	}
	mq, mr := f.m/f.l, f.m%f.l
	// The last output's window must lie inside x: the vector kernel does not
	// check its loads.
	last := p + (len(out)-1)*f.m
	_ = x[last/f.l+f.n-1]
	switch {
	case useAVX512 && f.n%16 == 0:
		polyphaseAVX512(&out[0], len(out), &x[0], &f.taps[0], f.n, f.l, p, mq, mr)
		return
	case useAVX2:
		polyphaseAVX2(&out[0], len(out), &x[0], &f.taps[0], f.n, f.l, p, mq, mr)
		return
	}
	polyphaseGo(out, x, f.taps, f.n, f.l, p, mq, mr)
}

// polyphaseGo is the portable kernel. Its four partial sums let the adds
// run side by side instead of each waiting for the last.
func polyphaseGo(out, x, taps []float32, n, l, p, mq, mr int) {
	b := 0
	for i := range out {
		t := taps[p*n : p*n+n]
		w := x[b : b+n]
		var a0, a1, a2, a3 float32
		for ; len(t) >= 4 && len(w) >= 4; t, w = t[4:], w[4:] {
			a0 += w[0] * t[0]
			a1 += w[1] * t[1]
			a2 += w[2] * t[2]
			a3 += w[3] * t[3]
		}
		out[i] = (a0 + a1) + (a2 + a3)
		b += mq
		if p += mr; p >= l {
			p -= l
			b++
		}
	}
}

func toFloat(d []float32, s []int16) {
	d = d[:len(s)]
	if v := len(s) &^ 7; useAVX2 && v > 0 {
		toFloatAVX2(&d[0], &s[0], v)
		d, s = d[v:], s[v:]
	}
	for i, v := range s {
		d[i] = float32(v)
	}
}

// appendRounded appends acc rounded as Clamp16 does (half away from zero,
// saturating), without its branches: adding ±0.5 in float64 is exact for
// any float32 that can round to a nonzero int16, and the conversion then
// truncates.
func appendRounded(dst []int16, acc []float32) []int16 {
	n := len(dst)
	dst = slices.Grow(dst, len(acc))[:n+len(acc)]
	d := dst[n:]
	d = d[:len(acc)]
	if v := len(acc) &^ 7; useAVX2 && v > 0 {
		roundAVX2(&d[0], &acc[0], v)
		d, acc = d[v:], acc[v:]
	}
	for i, a := range acc {
		v := float64(a)
		v += math.Copysign(0.5, v)
		v = max(math.MinInt16, min(math.MaxInt16, v))
		d[i] = int16(v)
	}
	return dst
}

// Resample converts a whole signal from inRate to outRate in one call.
func Resample(src []int16, inRate, outRate int) ([]int16, error) {
	r, err := NewResampler(inRate, outRate)
	if err != nil {
		return nil, err
	}
	dst := r.Resample(make([]int16, 0, len(src)*outRate/inRate+1), src)
	return r.Flush(dst), nil
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// besselI0 is the zeroth-order modified Bessel function of the first kind.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
		if term < 1e-12*sum {
			break
		}
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
