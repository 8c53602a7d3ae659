package session

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// The shedding rule. A refusal is cheap only while few callers are being
// refused: each hears a prompt and, when a fallback has room, an offer it
// may wait up to a whole window to answer. When refusals come faster than
// Config.ShedRate a second (over the last second), the machine is spending
// itself on callers it cannot serve while admitted turns wait for CPU. Past
// that rate a refusal is shed: it is still told, with the prompt table's
// sentence for its outcome (never hidden), but it offers nothing, so it
// costs one sentence of audio and no wait for an answer. Below the rate
// every refusal is told and offered in full. A drain, a backend failure
// and a session queued are never shed (the queued caller is not refused).
// docs/SECURITY.md ("When refusals saturate the machine") names the rule
// beside the refusal before the upgrade (-overload-http), which an operator
// chooses for the session stage.
type shedMeter struct {
	rate float64 // refusals a second before shedding; 0: never

	mu    sync.Mutex
	start time.Time // the current one-second window's
	n     int       // refusals in it
	prev  int       // refusals in the window before
}

// refused counts one refusal at now and reports whether it is shed: when
// the refusals of the last second, this one included, exceed the rate.
// The last second is the current window plus the part of the previous one
// it still covers, as a sliding-window rate limiter counts.
func (m *shedMeter) refused(now time.Time) bool {
	if m.rate <= 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch el := now.Sub(m.start); {
	case m.start.IsZero() || el >= 2*time.Second:
		m.start, m.n, m.prev = now, 0, 0
	case el >= time.Second:
		m.start, m.n, m.prev = m.start.Add(time.Second), 0, m.n
	}
	m.n++
	left := 1 - float64(now.Sub(m.start))/float64(time.Second)
	return float64(m.prev)*left+float64(m.n) > m.rate
}

// refuse tells the call's Fallback of r, shed by the rule above when the
// engine is refusing faster than its ShedRate.
func (s *Engine) refuse(ctx context.Context, r Refusal, out Sender) {
	if r.Disposition != stages.Queued && !r.Final && r.Disposition != stages.Closed &&
		r.Disposition != 0 && s.shed.refused(s.cfg.Clock.Now()) {
		r.Shed = true
		s.m.ShedRefusals.Inc()
	}
	s.cfg.Fallback.Refused(ctx, r, out)
}
