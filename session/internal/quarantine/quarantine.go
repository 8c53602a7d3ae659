// Package quarantine is a stage's backend quarantine
// (session.Config.QuarantineAfter). A backend whose cleanups
// exceed the cleanup timeout QuarantineAfter times in a row is treated as
// wedged: its stage stops admitting new work, which is refused `closed`
// (the caller hears the stage's closed prompt: the service cannot do that
// now), the stage reports closed and quarantined in /v1/stages and /readyz
// answers 503 so that a load balancer sends new calls elsewhere. Leases
// whose cleanup is overdue stay held throughout: capacity is never
// returned on a guess. The stage reopens by itself once every overdue
// cleanup has been confirmed (the backend returned). A cleanup confirmed
// within the timeout ends a run of late ones.
package quarantine

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/prometheus/client_golang/prometheus"
)

// Q is a stage's run of late cleanups and its quarantine state.
type Q struct {
	After   int // 0: off
	Stage   string
	Timeout time.Duration // the cleanup timeout
	Clock   clock.Clock
	Log     *slog.Logger
	Gauge   *prometheus.GaugeVec // frontdoor_stage_quarantined
	Overdue *atomic.Int64        // the stage's cleanups overdue now

	mu     sync.Mutex
	streak int // cleanups overdue in a row
	on     bool
	since  time.Time
}

// On reports whether the stage is in quarantine.
func (s *Q) On() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// Late is called when a cancelled lease's cleanup passes the
// cleanup timeout (after the overdue count was raised).
func (s *Q) Late() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streak++
	if s.After <= 0 || s.on || s.streak < s.After {
		return
	}
	s.on, s.since = true, s.Clock.Now()
	s.Gauge.WithLabelValues(s.Stage).Set(1)
	s.Log.Error("backend quarantined: its stage admits no new work until every overdue cleanup is confirmed",
		"stage", s.Stage, "late_cleanups_in_a_row", s.streak, "overdue", s.Overdue.Load(), "cleanup_timeout", s.Timeout)
}

// OnTime is called when a cancelled lease's backend returned within
// the cleanup timeout: the run of late cleanups is over.
func (s *Q) OnTime() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		s.streak = 0
	}
}

// Confirmed is called when an overdue cleanup's backend finally
// returned (after the overdue count was lowered): with none left overdue,
// a quarantined stage reopens.
func (s *Q) Confirmed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on || s.Overdue.Load() > 0 {
		return
	}
	s.on, s.streak = false, 0
	s.Gauge.WithLabelValues(s.Stage).Set(0)
	s.Log.Warn("backend quarantine lifted: every overdue cleanup confirmed", "stage", s.Stage,
		"quarantined_for", clock.Since(s.Clock, s.since).Round(time.Millisecond))
}
