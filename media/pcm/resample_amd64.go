//go:build !purego

package pcm

import "golang.org/x/sys/cpu"

// useAVX2 chooses the vector kernel; tests turn it off to check the
// portable one on the same machine.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

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
