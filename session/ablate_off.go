//go:build !frontdoor_ablate

package session

// Without the tag frontdoor_ablate (ablate.go), nothing is left out: the
// compiler drops the branches these guard.
const (
	ablateHear  = false
	ablateSpeak = false
)

var ablateFrame []byte
