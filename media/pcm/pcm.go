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
	encode(dst[n:], samples)
	return dst
}

// encodeLoop is encode on any machine: out holds 2·len(samples) bytes.
func encodeLoop(out []byte, samples []int16) {
	for i := 0; i+4 <= len(samples); i += 4 { // four samples a step, one bounds check
		s := samples[i : i+4 : i+4]
		binary.LittleEndian.PutUint64(out[2*i:], uint64(uint16(s[0]))|uint64(uint16(s[1]))<<16|uint64(uint16(s[2]))<<32|uint64(uint16(s[3]))<<48)
	}
	for i := len(samples) &^ 3; i < len(samples); i++ {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(samples[i]))
	}
}

// Decode appends the samples in little-endian PCM16 bytes b to dst. If b has
// an odd length, the whole samples are decoded and ErrOddLength is returned.
func Decode(dst []int16, b []byte) ([]int16, error) {
	n := len(b) / 2
	m := len(dst)
	dst = slices.Grow(dst, n)[:m+n]
	decode(dst[m:], b[:2*n])
	if len(b)%2 != 0 {
		return dst, ErrOddLength
	}
	return dst, nil
}

// decodeLoop is decode on any machine: in holds 2·len(out) bytes.
func decodeLoop(out []int16, in []byte) {
	n := len(out)
	for i := 0; i+8 <= len(in); i += 8 { // four samples a step, one bounds check
		v := binary.LittleEndian.Uint64(in[i:])
		o := out[i/2 : i/2+4 : i/2+4]
		o[0], o[1], o[2], o[3] = int16(v), int16(v>>16), int16(v>>32), int16(v>>48)
	}
	for i := n &^ 3; i < n; i++ {
		out[i] = int16(binary.LittleEndian.Uint16(in[2*i:]))
	}
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
