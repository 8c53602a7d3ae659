package stagestest

import (
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// Clock is the manual clock of package clock, under the name the suites
// and tests of this module have long used.
type Clock = clock.Manual

// NewClock returns a manual Clock reading start.
func NewClock(start time.Time) *Clock { return clock.NewManual(start) }
