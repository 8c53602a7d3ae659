package pcm

import (
	"fmt"
	"math"
)

// refResampler is the resampler as it was before its polyphase tables were
// shared, padded and run by a vector kernel (commit 71b88f8): one dot
// product per output in float32, taps designed per resampler. It stays here
// as the reference that the fast path is compared with.
type refResampler struct {
	in, out int
	l, m    int         // output/input ratio reduced: L/M
	half    int         // taps each side of the centre, in input samples
	taps    [][]float32 // taps[phase][j], 2*half taps per phase
	buf     []float32   // input history; buf[pos/l] is the next output's centre
	pos     int         // next output position in 1/L input samples
}

// newRefResampler returns a resampler from inRate to outRate samples per second.
func newRefResampler(inRate, outRate int) (*refResampler, error) {
	if inRate <= 0 || outRate <= 0 {
		return nil, fmt.Errorf("pcm: rates %d -> %d: %w", inRate, outRate, ErrRatio)
	}
	g := gcd(inRate, outRate)
	r := &refResampler{in: inRate, out: outRate, l: outRate / g, m: inRate / g}
	if r.l > maxPhases {
		return nil, fmt.Errorf("pcm: rates %d -> %d need %d phases: %w", inRate, outRate, r.l, ErrRatio)
	}
	if inRate != outRate {
		r.design()
	}
	r.Reset()
	return r, nil
}

// design builds the polyphase table of a Kaiser-windowed sinc whose cutoff
// sits below the lower of the two Nyquist frequencies.
func (r *refResampler) design() {
	fc := 0.5 * rolloff * math.Min(1, float64(r.out)/float64(r.in)) // cycles per input sample
	r.half = int(math.Ceil(zeroCrossings / (2 * fc)))
	r.taps = make([][]float32, r.l)
	i0b := besselI0(kaiserBeta)
	for p := range r.l {
		row := make([]float32, 2*r.half)
		var sum float64
		vals := make([]float64, 2*r.half)
		for j := range vals {
			k := j - r.half + 1                         // input offset from the centre sample
			tau := float64(p)/float64(r.l) - float64(k) // distance from the output instant
			x := tau / float64(r.half)
			if x <= -1 || x >= 1 {
				continue
			}
			w := besselI0(kaiserBeta*math.Sqrt(1-x*x)) / i0b
			vals[j] = 2 * fc * sinc(2*fc*tau) * w
			sum += vals[j]
		}
		for j, v := range vals {
			row[j] = float32(v / sum) // unity DC gain in every phase
		}
		r.taps[p] = row
	}
}

// Reset forgets all buffered input, as at the start of a new stream.
func (r *refResampler) Reset() {
	r.buf = make([]float32, r.half, r.half+4096)
	r.pos = r.half * r.l
}

// Resample appends to dst the output for the next chunk of input src.
func (r *refResampler) Resample(dst, src []int16) []int16 {
	if r.in == r.out {
		return append(dst, src...)
	}
	for _, s := range src {
		r.buf = append(r.buf, float32(s))
	}
	return r.drain(dst)
}

// Flush appends the output still held back by the filter's look-ahead, as if
// the input were followed by silence, and resets the resampler.
func (r *refResampler) Flush(dst []int16) []int16 {
	if r.in == r.out {
		return dst
	}
	r.buf = append(r.buf, make([]float32, r.half)...)
	dst = r.drain(dst)
	r.Reset()
	return dst
}

func (r *refResampler) drain(dst []int16) []int16 {
	for {
		base := r.pos / r.l
		if base+r.half >= len(r.buf) {
			break
		}
		win := r.buf[base-r.half+1 : base+r.half+1]
		taps := r.taps[r.pos%r.l]
		var acc float32
		for j, t := range taps {
			acc += win[j] * t
		}
		dst = append(dst, Clamp16(float64(acc)))
		r.pos += r.m
	}
	if drop := r.pos/r.l - r.half; drop > 0 {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.pos -= drop * r.l
	}
	return dst
}
