//go:build !amd64 || purego

package pcm

// useAVX2 and useAVX512 are false where there is no vector kernel.
var useAVX2, useAVX512 = false, false

// lanes is what a phase's taps are padded to: the portable kernel takes
// four at a time.
const lanes = 4

func polyphaseAVX2(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int) {
	panic("pcm: no vector kernel on this platform")
}

func toFloatAVX2(d *float32, s *int16, n int) { panic("pcm: no vector kernel on this platform") }

func roundAVX2(d *int16, s *float32, n int) { panic("pcm: no vector kernel on this platform") }

func polyphaseAVX512(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int) {
	panic("pcm: no vector kernel on this platform")
}
