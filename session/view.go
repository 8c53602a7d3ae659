package session

import (
	"context"

	"github.com/frontdoorhq/frontdoor/session/internal/metrics"
	"github.com/frontdoorhq/frontdoor/session/view"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Stages reports every stage: limits, inventory, pending and overdue
// cleanup, the ledger and the waiting list.
func (s *Engine) Stages() view.Stages {
	v := view.Stages{Draining: s.draining.Load(), At: s.cfg.Clock.Now()}
	v.Calls, v.CallsByTransport = s.callCounts(false)
	for _, st := range s.stageList() {
		sv, err := view.Read(context.Background(), st)
		if err != nil {
			s.m.ViewErrors.WithLabelValues(st.Name()).Inc()
		}
		v.Stages = append(v.Stages, sv)
	}
	return v
}

// CallsByTransport returns the number of calls in progress by the name
// their transport declared (Capabilities.Name, view.TransportOther for none),
// listing only transports with calls in progress.
func (s *Engine) CallsByTransport() map[string]int {
	_, m := s.callCounts(false)
	return m
}

// callCounts returns the calls in progress and their split by transport,
// read together. With seen, every transport name seen since the engine
// started is listed, at 0 once its calls have ended (for the gauge, whose
// series should not vanish).
func (s *Engine) callCounts(seen bool) (int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.byName))
	for name, n := range s.byName {
		if n > 0 || seen {
			m[name] = n
		}
	}
	return len(s.calls), m
}

// snapshot is st's snapshot for a scrape: the last seen (closed) while it
// cannot be read, the read error counted.
func (s *Engine) snapshot(st *stage) stages.Snapshot {
	sn, err := st.Snapshot(context.Background())
	if err != nil {
		s.m.ViewErrors.WithLabelValues(st.Name()).Inc()
	}
	return sn
}

// scrapeSource is the engine as its metrics collectors read it.
type scrapeSource struct{ s *Engine }

func (c scrapeSource) ScrapeStages() []metrics.Stage {
	var out []metrics.Stage
	for _, st := range c.s.stageList() {
		out = append(out, metrics.Stage{Name: st.Name(), Snapshot: c.s.snapshot(st), Overdue: st.Overdue()})
	}
	return out
}

func (c scrapeSource) TransportsSeen() map[string]int {
	_, m := c.s.callCounts(true)
	return m
}
