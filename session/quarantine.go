package session

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Backend quarantine (Config.QuarantineAfter). A backend whose cleanups
// exceed the cleanup timeout QuarantineAfter times in a row is treated as
// wedged: its stage stops admitting new work, which is refused `closed`
// (the caller hears the stage's closed prompt: the service cannot do that
// now), the stage reports closed and quarantined in /v1/stages and /readyz
// answers 503 so that a load balancer sends new calls elsewhere. Leases
// whose cleanup is overdue stay held throughout: capacity is never
// returned on a guess. The stage reopens by itself once every overdue
// cleanup has been confirmed (the backend returned). A cleanup confirmed
// within the timeout ends a run of late ones.

// quarantine is a stage's run of late cleanups and its quarantine state.
type quarantine struct {
	after int // 0: off

	mu     sync.Mutex
	streak int // cleanups overdue in a row
	on     bool
	since  time.Time
}

// quarantined reports whether the stage is in quarantine.
func (s *stage) quarantined() bool {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.q.on
}

// cleanupLate is called when a cancelled lease's cleanup passes the
// cleanup timeout (after the overdue count was raised).
func (s *stage) cleanupLate() {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	s.q.streak++
	if s.q.after <= 0 || s.q.on || s.q.streak < s.q.after {
		return
	}
	s.q.on, s.q.since = true, s.clock.Now()
	s.m.Quarantined.WithLabelValues(s.name).Set(1)
	s.log.Error("backend quarantined: its stage admits no new work until every overdue cleanup is confirmed",
		"stage", s.name, "late_cleanups_in_a_row", s.q.streak, "overdue", s.overdue.Load(), "cleanup_timeout", s.timeout)
}

// cleanupOnTime is called when a cancelled lease's backend returned within
// the cleanup timeout: the run of late cleanups is over.
func (s *stage) cleanupOnTime() {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if !s.q.on {
		s.q.streak = 0
	}
}

// cleanupConfirmed is called when an overdue cleanup's backend finally
// returned (after the overdue count was lowered): with none left overdue,
// a quarantined stage reopens.
func (s *stage) cleanupConfirmed() {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if !s.q.on || s.overdue.Load() > 0 {
		return
	}
	s.q.on, s.q.streak = false, 0
	s.m.Quarantined.WithLabelValues(s.name).Set(0)
	s.log.Warn("backend quarantine lifted: every overdue cleanup confirmed", "stage", s.name,
		"quarantined_for", stages.Since(s.clock, s.q.since).Round(time.Millisecond))
}

// setupQuarantine gives the backend stages (recognize, model, synthesis)
// their quarantine policy.
func (s *Engine) setupQuarantine(after int) {
	for _, st := range []*stage{s.recognize, s.model, s.synth} {
		st.q.after = after // its Guard (newStage) refuses while quarantined
	}
}

// quarantinedStages names the stages in quarantine, for /readyz.
func (s *Engine) quarantinedStages() error {
	var names []string
	for _, st := range s.stageList() {
		if st.quarantined() {
			names = append(names, st.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("backend quarantined: %s", strings.Join(names, ", "))
}
