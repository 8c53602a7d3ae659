//go:build frontdoor_ablate

package session

import (
	"os"
	"strings"
)

// A build with the tag frontdoor_ablate can leave out a call's own work
// on each frame, to measure what that work costs against the floor
// (.ci/bench-ablate, docs/BENCHMARKS.md section 6). FRONTDOOR_ABLATE
// lists what is left out:
//   - hear: a caller's audio frame is read and dropped (no rate limit,
//     decoding, VAD or pre-roll);
//   - speak: each step of the synthesizer writes one fixed 20 ms frame
//     straight to the transport instead of its audio through the framer,
//     the outbound queue and its writer (no generation, premise or
//     pacing checks).
//
// Such a build is not a server: it is never shipped or tested as one.
var (
	ablateHear  = ablated("hear")
	ablateSpeak = ablated("speak")
)

func ablated(what string) bool {
	for _, w := range strings.Split(os.Getenv("FRONTDOOR_ABLATE"), ",") {
		if w == what {
			return true
		}
	}
	return false
}

// ablateFrame is what an ablated synthesizer step writes: 20 ms of
// PCM16 at 16 kHz.
var ablateFrame = make([]byte, 640)
