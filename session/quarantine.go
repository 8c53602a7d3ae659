package session

import (
	"fmt"
	"strings"
)

// The backend quarantine (package internal/quarantine): a stage whose
// cleanups go overdue Config.QuarantineAfter times in a row admits no
// new work until they are confirmed.

// setupQuarantine gives the backend stages (recognize, model, synthesis)
// their quarantine policy.
func (s *Engine) setupQuarantine(after int) {
	for _, st := range []*stage{s.recognize, s.model, s.synth} {
		st.q.After = after // its Guard (newStage) refuses while quarantined
	}
}

// quarantinedStages names the stages in quarantine, for /readyz.
func (s *Engine) quarantinedStages() error {
	var names []string
	for _, st := range s.stageList() {
		if st.q.On() {
			names = append(names, st.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("backend quarantined: %s", strings.Join(names, ", "))
}
