package load

import (
	"fmt"
	"strings"
)

// turnStages are the stages a speech turn passes.
var turnStages = map[string]bool{"recognize": true, "model": true, "synthesis": true}

// twilioNotes warns of what the Twilio wire hides from the callers.
func (r *Report) twilioNotes() {
	var n uint64
	for _, s := range r.Server.Stages {
		if turnStages[s.Stage] {
			n += s.Delta.Refused.Total() + s.Delta.Expired
		}
	}
	if n > 0 {
		r.warn("the server refused or expired %d turns (see server.stages): the Twilio wire does not tell a spoken refusal prompt from an answer, so that prompt audio counted here as replies", n)
	}
}

// twilioSummary is the Summary's view of the turn stages in a Twilio run:
// the callers see no dispositions, the server's ledgers do.
func (r *Report) twilioSummary(b *strings.Builder) {
	var parts []string
	for _, s := range r.Server.Stages {
		if !turnStages[s.Stage] {
			continue
		}
		d := s.Delta
		parts = append(parts, fmt.Sprintf("%s offered %d completed %d refused %d expired %d cancelled %d",
			s.Stage, d.Offered, d.Completed, d.Refused.Total(), d.Expired, d.CancelledQueued+d.ReleasedCancelled))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "server turn stages: %s\n", strings.Join(parts, "; "))
	}
}
