package pcm

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrOddLength reports PCM16 bytes that do not form whole samples.
var ErrOddLength = errors.New("pcm: odd number of bytes in PCM16 data")

// Encode appends the little-endian bytes of samples to dst.
func Encode(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
	}
	return dst
}

// Decode appends the samples in little-endian PCM16 bytes b to dst. If b has
// an odd length, the whole samples are decoded and ErrOddLength is returned.
func Decode(dst []int16, b []byte) ([]int16, error) {
	n := len(b) / 2
	for i := range n {
		dst = append(dst, int16(binary.LittleEndian.Uint16(b[2*i:])))
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

// DBFS returns the level of samples in dB relative to a full-scale sine
// (a full-scale square wave reads +3 dB); silence reads -inf.
func DBFS(samples []int16) float64 {
	return 20 * math.Log10(RMS(samples)*math.Sqrt2/32768)
}
