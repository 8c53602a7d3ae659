package pcm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestEncodeDecode(t *testing.T) {
	in := []int16{0, 1, -1, math.MaxInt16, math.MinInt16, 0x1234}
	b := Encode(nil, in)
	want := []byte{0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80, 0x34, 0x12}
	if !slices.Equal(b, want) {
		t.Fatalf("Encode = % X, want % X", b, want)
	}
	out, err := Decode(nil, b)
	if err != nil || !slices.Equal(out, in) {
		t.Fatalf("Decode = %v, %v", out, err)
	}
	out, err = Decode(nil, b[:3])
	if !errors.Is(err, ErrOddLength) || len(out) != 1 {
		t.Fatalf("Decode odd = %v, %v", out, err)
	}
}

func TestClamp16(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want int16
	}{{0.4, 0}, {0.6, 1}, {-0.6, -1}, {40000, 32767}, {-40000, -32768}} {
		if got := Clamp16(tt.in); got != tt.want {
			t.Errorf("Clamp16(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func ExampleDecode() {
	samples, err := Decode(nil, []byte{0x01, 0x00, 0xFF, 0xFF})
	fmt.Println(samples, err)
	// Output: [1 -1] <nil>
}

// TestEncodeDecodeAppend: both append after what dst holds, whatever its
// spare capacity.
func TestEncodeDecodeAppend(t *testing.T) {
	in := []int16{1, -2, 300, math.MinInt16}
	for _, c := range []int{0, 2, 64} {
		b := append(make([]byte, 0, c), 0xAA, 0xBB)
		b = Encode(b, in)
		if want := append([]byte{0xAA, 0xBB}, Encode(nil, in)...); !slices.Equal(b, want) {
			t.Fatalf("cap %d: Encode appended % X, want % X", c, b, want)
		}
		s := append(make([]int16, 0, c), 7)
		s, err := Decode(s, b[2:])
		if err != nil || !slices.Equal(s, append([]int16{7}, in...)) {
			t.Fatalf("cap %d: Decode appended %v, %v", c, s, err)
		}
	}
}

// refEncode and refDecode are Encode and Decode as they were before they
// grew dst once per call (commit 71b88f8), for the benchmarks.
func refEncode(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
	}
	return dst
}

func refDecode(dst []int16, b []byte) []int16 {
	for i := range len(b) / 2 {
		dst = append(dst, int16(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return dst
}

// BenchmarkEncode and BenchmarkDecode convert one 20 ms frame at 16 kHz
// into a nil dst, as the session does per frame: the previous code (ref)
// and this one side by side.
func BenchmarkEncode(b *testing.B) {
	s := tone(16000, 440, 8000, 320)
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = refEncode(nil, s)
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Encode(nil, s)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	p := Encode(nil, tone(16000, 440, 8000, 320))
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = refDecode(nil, p)
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Decode(nil, p)
		}
	})
}

// The machine's encode and decode (a copy on a little-endian machine) give
// the bytes and samples of the portable loops, at every length.
func TestNativeMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 330 {
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(r.Uint32())
		}
		copy(s, []int16{-32768, 32767}) // (the extremes first)
		got, want := make([]byte, 2*n), make([]byte, 2*n)
		encode(got, s)
		encodeLoop(want, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("encode of %d samples differs", n)
		}
		gs, ws := make([]int16, n), make([]int16, n)
		decode(gs, want)
		decodeLoop(ws, want)
		if !slices.Equal(gs, ws) || !slices.Equal(gs, s) {
			t.Fatalf("decode of %d samples differs", n)
		}
	}
}
