//go:build !purego

package pcm

import "golang.org/x/sys/cpu"

// useAVX2 and useAVX512 choose the vector kernels; tests turn them off to
// check the others on the same machine.
var (
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useAVX512 = useAVX2 && cpu.X86.HasAVX512F
)

// lanes is what a phase's taps are padded to (zeros in front), so that
// the kernels run whole vectors with no tail to handle: 16 floats where
// the 16-float kernel may run (a multiple of 8, so the others run on the
// same tables).
var lanes = func() int {
	if useAVX512 {
		return 16
	}
	return 8
}()

// polyphaseAVX2 is polyphaseGo over 8-float vectors with fused
// multiply-adds (resample_amd64.s). It does not check its loads: polyphase
// checks that the last window lies inside x.
//
//go:noescape
func polyphaseAVX2(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int)

// toFloatAVX2 converts n samples, n a multiple of 8 (resample_amd64.s).
//
//go:noescape
func toFloatAVX2(d *float32, s *int16, n int)

// roundAVX2 rounds n sums as Clamp16 does, n a multiple of 8
// (resample_amd64.s).
//
//go:noescape
func roundAVX2(d *int16, s *float32, n int)

// polyphaseAVX512 is polyphaseAVX2 over 16-float vectors, for n a multiple
// of 16 (resample_amd64.s).
//
//go:noescape
func polyphaseAVX512(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int)
