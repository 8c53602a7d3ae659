//go:build frontdoor_ablate

package ablate

import (
	"os"
	"strings"
)

// In a build with the tag, FRONTDOOR_ABLATE lists what is left out.
var (
	Hear  = ablated("hear")
	Speak = ablated("speak")
)

func ablated(what string) bool {
	for _, w := range strings.Split(os.Getenv("FRONTDOOR_ABLATE"), ",") {
		if w == what {
			return true
		}
	}
	return false
}

// Frame is what a left-out synthesizer step writes: 20 ms of PCM16 at
// 16 kHz.
var Frame = make([]byte, 640)
