package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/session/internal/metrics"
	"github.com/frontdoorhq/frontdoor/stages"
)

// StageView is one stage as /v1/stages reports it.
type StageView struct {
	Name             string          `json:"name"`
	Slots            int             `json:"slots"`
	QueueLimit       int             `json:"queue_limit"`
	MaxWaitMS        int64           `json:"max_wait_ms"`
	CleanupTimeoutMS int64           `json:"cleanup_timeout_ms"`
	Closed           bool            `json:"closed"`
	Queued           int             `json:"queued"`
	Leased           int             `json:"leased"`
	CleanupPending   int             `json:"cleanup_pending"`
	OldestCleanupMS  int64           `json:"oldest_cleanup_ms"`
	CleanupOverdue   int64           `json:"cleanup_overdue"`
	Quarantined      bool            `json:"quarantined"`
	OldestQueuedMS   int64           `json:"oldest_queued_ms"`
	Owners           int             `json:"owners"`
	Ledger           stages.Ledger   `json:"ledger"`
	Waiting          []WaiterView    `json:"waiting"`
	Snapshot         stages.Snapshot `json:"snapshot"`
	// Error says why the stage could not be read just now (a fleet store
	// that does not answer): the figures are the last seen.
	Error string `json:"error,omitempty"`
}

// WaiterView is one waiting ticket.
type WaiterView struct {
	ID       string `json:"id"`
	Owner    string `json:"owner"`
	Position int    `json:"position"`
	AgeMS    int64  `json:"age_ms"`
}

// StagesView is the body of GET /v1/stages.
type StagesView struct {
	Draining bool `json:"draining"`
	// Calls counts the calls in progress; CallsByTransport splits them by
	// the transport that carries them (Capabilities.Name, TransportOther
	// for none), listing only transports with calls in progress.
	Calls            int            `json:"calls"`
	CallsByTransport map[string]int `json:"calls_by_transport"`
	Stages           []StageView    `json:"stages"`
	At               time.Time      `json:"at"`
}

// Stages reports every stage: limits, inventory, pending and overdue
// cleanup, the ledger and the waiting list.
func (s *Engine) Stages() StagesView {
	v := StagesView{Draining: s.draining.Load(), At: s.cfg.Clock.Now()}
	v.Calls, v.CallsByTransport = s.callCounts(false)
	ctx := context.Background()
	for _, st := range s.stageList() {
		sn, err := st.snapshot(ctx)
		if err != nil {
			s.m.ViewErrors.WithLabelValues(st.name).Inc()
		}
		sv := StageView{
			Name:             st.name,
			Slots:            sn.Limits.Slots,
			QueueLimit:       sn.Limits.Waiting,
			MaxWaitMS:        sn.Limits.MaxAge.Milliseconds(),
			CleanupTimeoutMS: st.timeout.Milliseconds(),
			Closed:           sn.Closed,
			Queued:           sn.Queued,
			Leased:           sn.Leased,
			CleanupPending:   sn.CleanupPending,
			OldestCleanupMS:  sn.OldestCleanup.Milliseconds(),
			CleanupOverdue:   st.overdue.Load(),
			Quarantined:      st.quarantined(),
			OldestQueuedMS:   sn.OldestQueued.Milliseconds(),
			Owners:           sn.Owners,
			Ledger:           sn.Ledger,
			Waiting:          []WaiterView{},
			Snapshot:         sn,
		}
		if err != nil {
			sv.Error = err.Error()
		}
		waiting, _ := st.view.Waiting(ctx)
		for _, w := range waiting {
			sv.Waiting = append(sv.Waiting, WaiterView{ID: w.ID, Owner: w.Owner, Position: w.Position, AgeMS: w.Age.Milliseconds()})
		}
		v.Stages = append(v.Stages, sv)
	}
	return v
}

// TransportOther is the name the calls of a transport that declared no
// Capabilities.Name are counted under.
const TransportOther = "other"

func transportName(name string) string {
	if name == "" {
		return TransportOther
	}
	return name
}

// CallsByTransport returns the number of calls in progress by the name
// their transport declared (Capabilities.Name, TransportOther for none),
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

// Stage returns the named stage's view, or false.
func (v StagesView) Stage(name string) (StageView, bool) {
	for _, s := range v.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return StageView{}, false
}

// scrape is the engine as its metrics collectors read it.
type scrapeSource struct{ s *Engine }

func (c scrapeSource) ScrapeStages() []metrics.Stage {
	var out []metrics.Stage
	for _, st := range c.s.stageList() {
		out = append(out, metrics.Stage{Name: st.name, Snapshot: c.s.snapshot(st), Overdue: st.overdue.Load()})
	}
	return out
}

func (c scrapeSource) TransportsSeen() map[string]int {
	_, m := c.s.callCounts(true)
	return m
}

// snapshot is st's snapshot for a scrape: the last seen (closed) while it
// cannot be read, the read error counted.
func (s *Engine) snapshot(st *stage) stages.Snapshot {
	sn, err := st.snapshot(context.Background())
	if err != nil {
		s.m.ViewErrors.WithLabelValues(st.name).Inc()
	}
	return sn
}
