//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package pcm

import "unsafe"

// On a little-endian machine PCM16 bytes are the samples' own memory:
// encoding and decoding are a copy (a caller frame is decoded and a reply
// frame encoded 50 times a second per call).

func encode(out []byte, samples []int16) {
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(samples))), 2*len(samples)))
}

func decode(out []int16, in []byte) {
	copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), 2*len(out)), in)
}
