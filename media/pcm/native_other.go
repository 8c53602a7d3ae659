//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package pcm

func encode(out []byte, samples []int16) { encodeLoop(out, samples) }

func decode(out []int16, in []byte) { decodeLoop(out, in) }
