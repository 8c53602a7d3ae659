package session

import (
	"context"

	"github.com/frontdoorhq/frontdoor/stages"
)

// The shedding rule (its meter: meter.Shed): past Config.ShedRate refusals
// a second a refusal is told but offers nothing.

// refuse tells the call's Fallback of r, shed by the rule above when the
// engine is refusing faster than its ShedRate.
func (s *Engine) refuse(ctx context.Context, r Refusal, out Sender) {
	if r.Disposition != stages.Queued && !r.Final && r.Disposition != stages.Closed &&
		r.Disposition != 0 && s.shed.Refused(s.cfg.Clock.Now()) {
		r.Shed = true
		s.m.ShedRefusals.Inc()
	}
	s.cfg.Fallback.Refused(ctx, r, out)
}
