package g711

import (
	"encoding/binary"
	"testing"
)

// checkLaw treats data both as codes (decode then encode must reproduce them)
// and as little-endian PCM (the quantisation error must stay within half a
// step of the sample's segment, plus the clip margin at full scale).
func checkLaw(t *testing.T, name string, data []byte, enc func(int16) byte, dec func(byte) int16, errBound func(int) int) {
	for _, b := range data {
		got := enc(dec(b))
		if got != b && !(name == "mulaw" && b == 0x7F && got == 0xFF) {
			t.Fatalf("%s: enc(dec(0x%02X)) = 0x%02X", name, b, got)
		}
	}
	for i := 0; i+1 < len(data); i += 2 {
		x := int(int16(binary.LittleEndian.Uint16(data[i:])))
		y := int(dec(enc(int16(x))))
		if (x >= 0) != (y >= 0) && y != 0 {
			t.Fatalf("%s: sign flipped: %d -> %d", name, x, y)
		}
		if d := abs(x - y); d > errBound(abs(x)) {
			t.Fatalf("%s: %d -> %d, error %d > %d", name, x, y, d, errBound(abs(x)))
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func FuzzMulawRoundTrip(f *testing.F) {
	f.Add([]byte{0x00, 0x80, 0xFF, 0x7F})
	f.Add([]byte{0xFF, 0x7F, 0x01, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLaw(t, "mulaw", data, LinearToMulaw, MulawToLinear, func(a int) int { return (a+132)/16 + 4 })
	})
}

func FuzzAlawRoundTrip(f *testing.F) {
	f.Add([]byte{0xD5, 0x55, 0xAA, 0x2A})
	f.Add([]byte{0x00, 0x80, 0xFF, 0x7F})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLaw(t, "alaw", data, LinearToAlaw, AlawToLinear, func(a int) int { return a/16 + 16 })
	})
}

func benchPCM() []int16 {
	pcm := make([]int16, 160) // one 20 ms telephony frame
	for i := range pcm {
		pcm[i] = int16(i*409 - 32000)
	}
	return pcm
}

func BenchmarkEncodeMulaw(b *testing.B) {
	pcm := benchPCM()
	dst := make([]byte, 0, len(pcm))
	b.SetBytes(int64(len(pcm) * 2))
	for b.Loop() {
		dst = EncodeMulaw(dst[:0], pcm)
	}
}

func BenchmarkDecodeMulaw(b *testing.B) {
	ulaw := EncodeMulaw(nil, benchPCM())
	dst := make([]int16, 0, len(ulaw))
	b.SetBytes(int64(len(ulaw)))
	for b.Loop() {
		dst = DecodeMulaw(dst[:0], ulaw)
	}
}

func BenchmarkEncodeAlaw(b *testing.B) {
	pcm := benchPCM()
	dst := make([]byte, 0, len(pcm))
	b.SetBytes(int64(len(pcm) * 2))
	for b.Loop() {
		dst = EncodeAlaw(dst[:0], pcm)
	}
}

func BenchmarkDecodeAlaw(b *testing.B) {
	alaw := EncodeAlaw(nil, benchPCM())
	dst := make([]int16, 0, len(alaw))
	b.SetBytes(int64(len(alaw)))
	for b.Loop() {
		dst = DecodeAlaw(dst[:0], alaw)
	}
}
