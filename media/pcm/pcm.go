package pcm

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// ErrOddLength reports PCM16 bytes that do not form whole samples.
var ErrOddLength = errors.New("pcm: odd number of bytes in PCM16 data")

// Encode appends the little-endian bytes of samples to dst. It grows dst
// once for the whole frame: appending sample by sample grew a nil dst about
// ten times per 20 ms frame, a measurable part of a call's CPU.
func Encode(dst []byte, samples []int16) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(samples))[:n+2*len(samples)]
	out := dst[n:]
	for i, s := range samples {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return dst
}

// Decode appends the samples in little-endian PCM16 bytes b to dst. If b has
// an odd length, the whole samples are decoded and ErrOddLength is returned.
func Decode(dst []int16, b []byte) ([]int16, error) {
	n := len(b) / 2
	m := len(dst)
	dst = slices.Grow(dst, n)[:m+n]
	out := dst[m:]
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	if len(b)%2 != 0 {
		return dst, ErrOddLength
	}
	return dst, nil
}

// Clamp16 rounds x to the nearest int16, saturating at the range limits.
func Clamp16(x float64) int16 {
	x = math.Round(x)
	switch {
	case x > math.MaxInt16:
		return math.MaxInt16
	case x < math.MinInt16:
		return math.MinInt16
	}
	return int16(x)
}

// RMS returns the root mean square of samples (0 for none).
func RMS(samples []int16) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range samples {
		f := float64(s)
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(samples)))
}
