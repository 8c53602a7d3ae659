//go:build !frontdoor_ablate

// Package ablate says what a measurement build leaves out of a call's work
// on each frame, to measure that work against the floor (.ci/bench-ablate,
// docs/BENCHMARKS.md section 6). Only a build with the tag
// frontdoor_ablate leaves anything out, by the environment variable
// FRONTDOOR_ABLATE, a comma-separated list of:
//   - hear: a caller's audio frame is read and dropped (no rate limit,
//     decoding, VAD or pre-roll);
//   - speak: each step of the synthesizer writes one fixed 20 ms frame
//     (Frame) straight to the transport instead of its audio through the
//     framer, the outbound queue and its writer (no generation, premise
//     or pacing checks).
//
// Such a build is not a server: it is never shipped or tested as one.
// Without the tag Hear and Speak are constants, false, and the compiler
// drops the branches they guard.
package ablate

const (
	Hear  = false
	Speak = false
)

// Frame is what a left-out synthesizer step writes (none here).
var Frame []byte
