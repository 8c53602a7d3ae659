package twilio

import (
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Progress is how much of one utterance went out and how much the caller
// heard; see gateway.Progress, where the type now lives.
type Progress = gateway.Progress

// Tracker follows outbound audio and marks for one stream; see
// gateway.Tracker, where the type now lives and which every gateway dialect
// shares.
type Tracker = gateway.Tracker

// NewTracker returns a Tracker reading time from c (clock.System when nil).
func NewTracker(c clock.Clock) *Tracker { return gateway.NewTracker(c) }
