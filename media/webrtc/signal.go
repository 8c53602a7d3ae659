package webrtc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	pion "github.com/pion/webrtc/v4"
)

// Signal types.
const (
	SignalOffer     = "offer"
	SignalAnswer    = "answer"
	SignalCandidate = "candidate"
)

// MaxSignalSize bounds one signalling message; SDP for one audio line and a
// data channel is a few kilobytes.
const MaxSignalSize = 64 << 10

// ErrSignal reports a signalling message that is not valid JSON of a known type.
var ErrSignal = errors.New("webrtc: bad signal")

// Signal is one signalling message, as JSON:
//
//	{"type":"offer","sdp":"v=0…"}
//	{"type":"answer","sdp":"v=0…"}
//	{"type":"candidate","candidate":{"candidate":"candidate:…","sdpMid":"0","sdpMLineIndex":0}}
type Signal struct {
	Type      string                 `json:"type"`
	SDP       string                 `json:"sdp,omitempty"`
	Candidate *pion.ICECandidateInit `json:"candidate,omitempty"`
}

// DecodeSignal parses a signalling message strictly.
func DecodeSignal(data []byte) (Signal, error) {
	var s Signal
	if len(data) > MaxSignalSize {
		return s, fmt.Errorf("%w: %d bytes", ErrSignal, len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Signal{}, fmt.Errorf("%w: %v", ErrSignal, err)
	}
	switch s.Type {
	case SignalOffer, SignalAnswer:
		if s.SDP == "" {
			return Signal{}, fmt.Errorf("%w: %s without sdp", ErrSignal, s.Type)
		}
	case SignalCandidate:
		if s.Candidate == nil {
			return Signal{}, fmt.Errorf("%w: candidate without candidate", ErrSignal)
		}
	default:
		return Signal{}, fmt.Errorf("%w: type %q", ErrSignal, s.Type)
	}
	return s, nil
}
