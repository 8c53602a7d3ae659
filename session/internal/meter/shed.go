package meter

import (
	"sync"
	"time"
)

// Shed is the meter of the shedding rule. A refusal is cheap only while
// few callers are being refused: each hears a prompt and, when a fallback has room, an offer it
// may wait up to a whole window to answer. When refusals come faster than
// session.Config.ShedRate a second (over the last second), the machine is
// spending itself on callers it cannot serve while admitted turns wait for CPU. Past
// that rate a refusal is shed: it is still told, with the prompt table's
// sentence for its outcome (never hidden), but it offers nothing, so it
// costs one sentence of audio and no wait for an answer. Below the rate
// every refusal is told and offered in full. A drain, a backend failure
// and a session queued are never shed (the queued caller is not refused).
// docs/SECURITY.md ("When refusals saturate the machine") names the rule
// beside the refusal before the upgrade (-overload-http), which an operator
// chooses for the session stage.
type Shed struct {
	Rate float64 // refusals a second before shedding; 0: never

	mu    sync.Mutex
	start time.Time // the current one-second window's
	n     int       // refusals in it
	prev  int       // refusals in the window before
}

// Refused counts one refusal at now and reports whether it is shed: when
// the refusals of the last second, this one included, exceed the rate.
// The last second is the current window plus the part of the previous one
// it still covers, as a sliding-window rate limiter counts.
func (m *Shed) Refused(now time.Time) bool {
	if m.Rate <= 0 {
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
	return float64(m.prev)*left+float64(m.n) > m.Rate
}
