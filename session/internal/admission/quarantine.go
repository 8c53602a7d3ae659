package admission

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/prometheus/client_golang/prometheus"
)

// The backend quarantine (session.Config.QuarantineAfter, Config.QuarantineAfter
// here). A backend whose cleanups exceed the cleanup timeout QuarantineAfter
// times in a row is treated as wedged: its stage stops admitting new work,
// which is refused `closed` (the caller hears the stage's closed prompt: the
// service cannot do that now), the stage reports closed and quarantined in
// /v1/stages and /readyz answers 503 so that a load balancer sends new calls
// elsewhere. Leases whose cleanup is overdue stay held throughout: capacity
// is never returned on a guess. The stage reopens by itself once every
// overdue cleanup has been confirmed (the backend returned). A cleanup
// confirmed within the timeout ends a run of late ones.

// quarantine is a stage's run of late cleanups and its quarantine state.
type quarantine struct {
	after   int // 0: off
	stage   string
	timeout time.Duration // the cleanup timeout
	clock   clock.Clock
	log     *slog.Logger
	gauge   *prometheus.GaugeVec // frontdoor_stage_quarantined, by stage
	overdue *atomic.Int64        // the stage's cleanups overdue now

	mu     sync.Mutex
	streak int // cleanups overdue in a row
	on     bool
	since  time.Time
}

// On reports whether the stage is quarantined.
func (s *quarantine) On() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// Late counts a cleanup gone overdue, and quarantines the stage at the
// after'th in a row.
func (s *quarantine) Late() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streak++
	if s.after <= 0 || s.on || s.streak < s.after {
		return
	}
	s.on, s.since = true, s.clock.Now()
	s.gauge.WithLabelValues(s.stage).Set(1)
	s.log.Error("backend quarantined: its stage admits no new work until every overdue cleanup is confirmed",
		"stage", s.stage, "late_cleanups_in_a_row", s.streak, "overdue", s.overdue.Load(), "cleanup_timeout", s.timeout)
}

// OnTime counts a cancelled lease's cleanup confirmed within the timeout:
// it ends a run of late ones (not a quarantine).
func (s *quarantine) OnTime() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		s.streak = 0
	}
}

// Confirmed counts an overdue cleanup confirmed at last: the quarantine is
// lifted once none is overdue.
func (s *quarantine) Confirmed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on || s.overdue.Load() > 0 {
		return
	}
	s.on, s.streak = false, 0
	s.gauge.WithLabelValues(s.stage).Set(0)
	s.log.Warn("backend quarantine lifted: every overdue cleanup confirmed", "stage", s.stage,
		"quarantined_for", clock.Since(s.clock, s.since).Round(time.Millisecond))
}

// Quarantined names the stages of list whose backend is quarantined (for
// /readyz), or returns nil.
func Quarantined(list []*Stage) error {
	var names []string
	for _, st := range list {
		if st.Quarantined() {
			names = append(names, st.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("backend quarantined: %s", strings.Join(names, ", "))
}
