package g711

import "slices"

// Silence values: what a zero sample encodes to.
const (
	MulawSilence byte = 0xFF
	AlawSilence  byte = 0xD5
)

var (
	mulawDecode [256]int16
	alawDecode  [256]int16
	// Encoders are indexed by the bits the law looks at: µ-law the top 14
	// bits of the sample, A-law the top 13. One's complement folding commutes
	// with an arithmetic right shift, so the shifted sample is enough.
	mulawEncode [1 << 14]byte
	alawEncode  [1 << 13]byte
)

func init() {
	for i := range 256 {
		mulawDecode[i] = mulawExpand(byte(i))
		alawDecode[i] = alawExpand(byte(i))
	}
	for i := range 1 << 14 {
		x := int16(i << 2) // covers every 14-bit pattern, sign included
		mulawEncode[uint16(x)>>2] = mulawCompress(x)
	}
	for i := range 1 << 13 {
		x := int16(i << 3)
		alawEncode[uint16(x)>>3] = alawCompress(x)
	}
}

// mulawCompress is the G.711 µ-law rule as specified by G.191.
func mulawCompress(x int16) byte {
	mag := int(x) >> 2
	if x < 0 {
		mag = int(^x) >> 2
	}
	mag += 33 // µ-law thresholds sit 33 (14-bit units) above A-law's
	if mag > 0x1FFF {
		mag = 0x1FFF
	}
	seg := 1
	for i := mag >> 6; i != 0; i >>= 1 {
		seg++
	}
	hi := 8 - seg
	lo := 0xF - (mag>>seg)&0xF
	b := byte(hi<<4 | lo)
	if x >= 0 {
		b |= 0x80
	}
	return b
}

func mulawExpand(b byte) int16 {
	inv := ^b
	exp := int(inv>>4) & 7
	mant := int(inv & 0xF)
	step := 4 << (exp + 1)
	mag := 0x80<<exp + step*mant + step/2 - 4*33
	if b < 0x80 {
		return int16(-mag)
	}
	return int16(mag)
}

// alawCompress is the G.711 A-law rule as specified by G.191.
func alawCompress(x int16) byte {
	v := int(x) >> 4
	if x < 0 {
		v = int(^x) >> 4
	}
	if v > 15 {
		exp := 1
		for v > 31 {
			v >>= 1
			exp++
		}
		v = v - 16 + exp<<4
	}
	if x >= 0 {
		v |= 0x80
	}
	return byte(v) ^ 0x55
}

func alawExpand(b byte) int16 {
	v := int(b^0x55) & 0x7F
	exp := v >> 4
	mant := v & 0xF
	if exp > 0 {
		mant += 16
	}
	mant = mant<<4 + 8
	if exp > 1 {
		mant <<= exp - 1
	}
	if b > 127 {
		return int16(mant)
	}
	return int16(-mant)
}

// LinearToMulaw encodes one sample to µ-law.
func LinearToMulaw(x int16) byte { return mulawEncode[uint16(x)>>2] }

// MulawToLinear decodes one µ-law byte.
func MulawToLinear(b byte) int16 { return mulawDecode[b] }

// LinearToAlaw encodes one sample to A-law.
func LinearToAlaw(x int16) byte { return alawEncode[uint16(x)>>3] }

// AlawToLinear decodes one A-law byte.
func AlawToLinear(b byte) int16 { return alawDecode[b] }

// EncodeMulaw appends the µ-law encoding of pcm to dst and returns it.
func EncodeMulaw(dst []byte, pcm []int16) []byte {
	dst = grow(dst, len(pcm))
	n := len(dst) - len(pcm)
	for i, x := range pcm {
		dst[n+i] = mulawEncode[uint16(x)>>2]
	}
	return dst
}

// DecodeMulaw appends the linear samples of the µ-law bytes in src to dst.
func DecodeMulaw(dst []int16, src []byte) []int16 {
	dst = growPCM(dst, len(src))
	n := len(dst) - len(src)
	for i, b := range src {
		dst[n+i] = mulawDecode[b]
	}
	return dst
}

// EncodeAlaw appends the A-law encoding of pcm to dst and returns it.
func EncodeAlaw(dst []byte, pcm []int16) []byte {
	dst = grow(dst, len(pcm))
	n := len(dst) - len(pcm)
	for i, x := range pcm {
		dst[n+i] = alawEncode[uint16(x)>>3]
	}
	return dst
}

// DecodeAlaw appends the linear samples of the A-law bytes in src to dst.
func DecodeAlaw(dst []int16, src []byte) []int16 {
	dst = growPCM(dst, len(src))
	n := len(dst) - len(src)
	for i, b := range src {
		dst[n+i] = alawDecode[b]
	}
	return dst
}

// grow and growPCM extend b by n elements. slices.Grow keeps append's
// amortised growth, so a caller that appends frame after frame to one
// buffer (a prompt's whole audio) copies it O(log n) times, not once per
// frame as an exact-size reallocation did.
func grow(b []byte, n int) []byte { return slices.Grow(b, n)[:len(b)+n] }

func growPCM(b []int16, n int) []int16 { return slices.Grow(b, n)[:len(b)+n] }
