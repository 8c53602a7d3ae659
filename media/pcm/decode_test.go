package pcm

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestDecodeLengths checks Decode, four samples a step, against one
// sample at a time, at every length up to 41 bytes, appending to a
// non-empty dst.
func TestDecodeLengths(t *testing.T) {
	in := make([]byte, 41)
	for i := range in {
		in[i] = byte(i*37 + 11)
	}
	for n := range len(in) + 1 {
		got, err := Decode([]int16{-7}, in[:n])
		if (n%2 != 0) != errors.Is(err, ErrOddLength) {
			t.Fatalf("%d bytes: err %v", n, err)
		}
		if len(got) != 1+n/2 || got[0] != -7 {
			t.Fatalf("%d bytes: %d samples, first %d", n, len(got), got[0])
		}
		for i := range n / 2 {
			if want := int16(binary.LittleEndian.Uint16(in[2*i:])); got[1+i] != want {
				t.Fatalf("%d bytes: sample %d = %d, want %d", n, i, got[1+i], want)
			}
		}
	}
}

// BenchmarkDecodeFrame: one 20 ms frame of 16 kHz PCM16 into a reused
// buffer, as a call's listener decodes caller audio.
func BenchmarkDecodeFrame(b *testing.B) {
	in := make([]byte, 640)
	for i := range in {
		in[i] = byte(i * 7)
	}
	var dst []int16
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		dst, _ = Decode(dst[:0], in)
	}
}
