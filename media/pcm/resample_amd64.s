//go:build !purego

#include "textflag.h"

// func polyphaseAVX2(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int)
//
// For each of count outputs: the dot product of the phase's row of n taps
// (n a multiple of 8) with the n inputs at x, four 8-lane accumulators
// summed at the end; then x moves on by mq inputs and the phase by mr,
// carrying one input when it passes l.
TEXT ·polyphaseAVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ count+8(FP), CX
	MOVQ x+16(FP), SI
	MOVQ taps+24(FP), DX
	MOVQ n+32(FP), R13
	MOVQ l+40(FP), R9
	MOVQ p+48(FP), R10
	MOVQ mq+56(FP), R11
	MOVQ mr+64(FP), R12
	TESTQ CX, CX
	JLE  done
	SHLQ $2, R13 // row length in bytes
	SHLQ $2, R11 // x step in bytes
	MOVQ R13, R8
	ANDQ $-128, R8 // bytes run four vectors at a time

output:
	MOVQ   R10, BX
	IMULQ  R13, BX
	ADDQ   DX, BX // this phase's taps
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	CMPQ   AX, R8
	JAE    tail

quad:
	VMOVUPS     (SI)(AX*1), Y4
	VMOVUPS     32(SI)(AX*1), Y5
	VMOVUPS     64(SI)(AX*1), Y6
	VMOVUPS     96(SI)(AX*1), Y7
	VFMADD231PS (BX)(AX*1), Y4, Y0
	VFMADD231PS 32(BX)(AX*1), Y5, Y1
	VFMADD231PS 64(BX)(AX*1), Y6, Y2
	VFMADD231PS 96(BX)(AX*1), Y7, Y3
	ADDQ        $128, AX
	CMPQ        AX, R8
	JB          quad

tail:
	CMPQ AX, R13
	JAE  sum
	VMOVUPS     (SI)(AX*1), Y4
	VFMADD231PS (BX)(AX*1), Y4, Y0
	ADDQ        $32, AX
	CMPQ AX, R13
	JAE  sum
	VMOVUPS     (SI)(AX*1), Y5
	VFMADD231PS (BX)(AX*1), Y5, Y1
	ADDQ        $32, AX
	CMPQ AX, R13
	JAE  sum
	VMOVUPS     (SI)(AX*1), Y6
	VFMADD231PS (BX)(AX*1), Y6, Y2
	ADDQ        $32, AX

sum:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DI)

	ADDQ $4, DI
	ADDQ R11, SI
	ADDQ R12, R10
	CMPQ R10, R9
	JB   next
	SUBQ R9, R10
	ADDQ $4, SI

next:
	DECQ CX
	JNZ  output

done:
	VZEROUPPER
	RET

// func toFloatAVX2(d *float32, s *int16, n int)
//
// d[i] = float32(s[i]) for n a multiple of 8.
TEXT ·toFloatAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   tfdone

tfloop:
	VPMOVSXWD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       tfloop

tfdone:
	VZEROUPPER
	RET

DATA half<>+0(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $4
DATA one<>+0(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $4
DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4
DATA signmask<>+0(SB)/4, $0x80000000
GLOBL signmask<>(SB), RODATA|NOPTR, $4

// func roundAVX2(d *int16, s *float32, n int)
//
// d[i] = Clamp16(s[i]) for n a multiple of 8: the truncated value, one
// further from zero when the dropped fraction is at least a half (what
// math.Round does), saturated to int16 by the pack.
TEXT ·roundAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   rdone
	VBROADCASTSS half<>(SB), Y10
	VBROADCASTSS one<>(SB), Y11
	VBROADCASTSS absmask<>(SB), Y12
	VBROADCASTSS signmask<>(SB), Y13

rloop:
	VMOVUPS      (SI), Y0
	VROUNDPS     $3, Y0, Y1       // toward zero
	VSUBPS       Y1, Y0, Y2       // the dropped fraction, exact
	VANDPS       Y12, Y2, Y2      // its size
	VCMPPS       $0x1d, Y10, Y2, Y2 // size >= 0.5 (GE_OQ)
	VANDPS       Y13, Y0, Y3      // the sign of s
	VORPS        Y11, Y3, Y3      // ±1
	VANDPS       Y2, Y3, Y3       // where rounding goes away from zero
	VADDPS       Y3, Y1, Y1
	VCVTTPS2DQ   Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPACKSSDW    X2, X1, X1
	VMOVDQU      X1, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          rloop

rdone:
	VZEROUPPER
	RET

// func polyphaseAVX512(out *float32, count int, x *float32, taps *float32, n, l, p, mq, mr int)
//
// polyphaseAVX2 over 16-float vectors, for n a multiple of 16: half the
// loads per tap, which is what bounds the 8-float kernel.
TEXT ·polyphaseAVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ count+8(FP), CX
	MOVQ x+16(FP), SI
	MOVQ taps+24(FP), DX
	MOVQ n+32(FP), R13
	MOVQ l+40(FP), R9
	MOVQ p+48(FP), R10
	MOVQ mq+56(FP), R11
	MOVQ mr+64(FP), R12
	TESTQ CX, CX
	JLE  zdone
	SHLQ $2, R13
	SHLQ $2, R11
	MOVQ R13, R8
	ANDQ $-256, R8 // bytes run four vectors at a time

zoutput:
	MOVQ   R10, BX
	IMULQ  R13, BX
	ADDQ   DX, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	CMPQ   AX, R8
	JAE    ztail

zquad:
	VMOVUPS     (SI)(AX*1), Z4
	VMOVUPS     64(SI)(AX*1), Z5
	VMOVUPS     128(SI)(AX*1), Z6
	VMOVUPS     192(SI)(AX*1), Z7
	VFMADD231PS (BX)(AX*1), Z4, Z0
	VFMADD231PS 64(BX)(AX*1), Z5, Z1
	VFMADD231PS 128(BX)(AX*1), Z6, Z2
	VFMADD231PS 192(BX)(AX*1), Z7, Z3
	ADDQ        $256, AX
	CMPQ        AX, R8
	JB          zquad

ztail:
	CMPQ AX, R13
	JAE  zsum
	VMOVUPS     (SI)(AX*1), Z4
	VFMADD231PS (BX)(AX*1), Z4, Z0
	ADDQ        $64, AX
	CMPQ AX, R13
	JAE  zsum
	VMOVUPS     (SI)(AX*1), Z5
	VFMADD231PS (BX)(AX*1), Z5, Z1
	ADDQ        $64, AX
	CMPQ AX, R13
	JAE  zsum
	VMOVUPS     (SI)(AX*1), Z6
	VFMADD231PS (BX)(AX*1), Z6, Z2
	ADDQ        $64, AX

zsum:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VMOVHLPS      X0, X0, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        X0, (DI)

	ADDQ $4, DI
	ADDQ R11, SI
	ADDQ R12, R10
	CMPQ R10, R9
	JB   znext
	SUBQ R9, R10
	ADDQ $4, SI

znext:
	DECQ CX
	JNZ  zoutput

zdone:
	VZEROUPPER
	RET
