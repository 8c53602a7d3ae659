package session

import (
	"fmt"
	"strings"
)

// quarantinedStages names the stages whose backend is quarantined
// (internal/admission: Config.QuarantineAfter cleanups overdue in a row),
// for /readyz.
func (s *Engine) quarantinedStages() error {
	var names []string
	for _, st := range s.stageList() {
		if st.Quarantined() {
			names = append(names, st.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("backend quarantined: %s", strings.Join(names, ", "))
}
