package pcm

import (
	"errors"
	"fmt"
	"math"
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
