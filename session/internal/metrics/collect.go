package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Stage is one stage as a scrape reads it: its name, its snapshot (the
// last seen, closed, when it cannot be read) and its overdue cleanups.
type Stage struct {
	Name     string
	Snapshot stages.Snapshot
	Overdue  int64
}

// Source is what the collectors read from the engine at scrape time.
type Source interface {
	// ScrapeStages reads every stage.
	ScrapeStages() []Stage
	// TransportsSeen counts the calls in progress by transport, every
	// transport seen since the engine started listed (at 0 once its calls
	// ended: a gauge's series should not vanish).
	TransportsSeen() map[string]int
}

// Register registers the collectors of src's stages, limits and calls by
// transport on reg.
func Register(reg prometheus.Registerer, src Source) {
	reg.MustRegister(newStageCollector(src), newTransportCollector(src), newLimitCollector(src))
}

// stageCollector exports every stage's Snapshot at scrape time.
type stageCollector struct {
	s Source

	dispositions, offered, depth, oldest, leases, slots, waitingCap, maxAge,
	cleanup, oldestCleanup, overdue, closed, takeErrors *prometheus.Desc
}

func newStageCollector(s Source) *stageCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"stage"}, labels...), nil)
	}
	return &stageCollector{
		s:             s,
		dispositions:  d("frontdoor_stage_dispositions_total", "Transitions counted once per identity, by stage and disposition (from the stage ledger).", "disposition"),
		offered:       d("frontdoor_stage_offered_total", "Work offered to the stage."),
		depth:         d("frontdoor_stage_queue_depth", "Work waiting for a lease."),
		oldest:        d("frontdoor_stage_oldest_queued_seconds", "Age of the oldest waiting work (since its Born)."),
		leases:        d("frontdoor_stage_leases", "Leases held, including those awaiting cleanup."),
		slots:         d("frontdoor_stage_slots", "Configured slots."),
		waitingCap:    d("frontdoor_stage_queue_limit", "Configured waiting positions."),
		maxAge:        d("frontdoor_stage_max_wait_seconds", "Configured maximum age of waiting work."),
		cleanup:       d("frontdoor_stage_cleanup_pending", "Cancelled leases whose backend has not yet returned."),
		oldestCleanup: d("frontdoor_stage_oldest_cleanup_seconds", "Age of the oldest pending cleanup."),
		overdue:       d("frontdoor_stage_cleanup_overdue", "Pending cleanups older than the cleanup timeout: capacity visibly reduced."),
		closed:        d("frontdoor_stage_closed", "1 while admission is closed (draining)."),
		takeErrors:    d("frontdoor_stage_take_errors_total", "Times the stage's dispatcher could not take waiting work (its Take failed)."),
	}
}

func (c *stageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.dispositions, c.offered, c.depth, c.oldest, c.leases, c.slots,
		c.waitingCap, c.maxAge, c.cleanup, c.oldestCleanup, c.overdue, c.closed, c.takeErrors} {
		ch <- d
	}
}

func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.ScrapeStages() {
		sn := st.Snapshot
		l := sn.Ledger
		for name, v := range map[string]uint64{
			"queued":       l.Queued,
			"admitted":     l.Admitted,
			"overloaded":   l.Refused.Overloaded,
			"expired":      l.Refused.Expired + l.Expired,
			"stale":        l.Refused.Stale,
			"out-of-order": l.Refused.OutOfOrder,
			"closed":       l.Refused.Closed,
			"cancelled":    l.CancelledQueued + l.CancelledActive,
			"completed":    l.Completed,
			"failed":       l.Failed, // released after the backend failed
			"released":     l.Released(),
			"lost":         l.Lost, // fleet mode: leases that ended by their TTL, not by Release
		} {
			ch <- prometheus.MustNewConstMetric(c.dispositions, prometheus.CounterValue, float64(v), st.Name, name)
		}
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Name)
		}
		ch <- prometheus.MustNewConstMetric(c.offered, prometheus.CounterValue, float64(l.Offered), st.Name)
		ch <- prometheus.MustNewConstMetric(c.takeErrors, prometheus.CounterValue, float64(sn.TakeErrors), st.Name)
		g(c.depth, float64(sn.Queued))
		g(c.oldest, sn.OldestQueued.Seconds())
		g(c.leases, float64(sn.Leased))
		g(c.slots, float64(sn.Limits.Slots))
		g(c.waitingCap, float64(sn.Limits.Waiting))
		g(c.maxAge, sn.Limits.MaxAge.Seconds())
		g(c.cleanup, float64(sn.CleanupPending))
		g(c.oldestCleanup, sn.OldestCleanup.Seconds())
		g(c.overdue, float64(st.Overdue))
		closed := 0.0
		if sn.Closed {
			closed = 1
		}
		g(c.closed, closed)
	}
}

// transportCollector exports the calls in progress by transport at scrape
// time, from the engine's own count (the one /v1/stages shows).
type transportCollector struct {
	s     Source
	calls *prometheus.Desc
}

func newTransportCollector(s Source) *transportCollector {
	return &transportCollector{s: s, calls: prometheus.NewDesc("frontdoor_sessions_by_transport",
		"Connected calls (frontdoor_sessions) by the transport that carries them (native, webrtc, twilio, ...; other when it declared none).",
		[]string{"transport"}, nil)}
}

func (c *transportCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.calls }

func (c *transportCollector) Collect(ch chan<- prometheus.Metric) {
	by := c.s.TransportsSeen()
	for name, n := range by {
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.GaugeValue, float64(n), name)
	}
}

// limitCollector exports, at scrape time, each stage's slot limit in force
// and, for an adaptive limit, its estimate and moves; and the turns Fair
// order gave and the refusals (expiries) it caused.
type limitCollector struct {
	s                                           Source
	limit, minLat, lat, changes, skips, overtak *prometheus.Desc
}

func newLimitCollector(s Source) *limitCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"stage"}, nil)
	}
	return &limitCollector{s: s,
		limit:   d("frontdoor_stage_limit", "The slot limit in force (moved at run time by an adaptive limit, -STAGE-slots auto)."),
		minLat:  d("frontdoor_stage_limit_min_latency_seconds", "Adaptive limit: the measured minimum latency to the stage's useful signal."),
		lat:     d("frontdoor_stage_limit_latency_seconds", "Adaptive limit: the last window's median latency to the stage's useful signal."),
		changes: d("frontdoor_stage_limit_changes_total", "Adaptive limit: moves of the limit made by this replica."),
		skips:   d("frontdoor_stage_fair_skips_total", "Fair order: slots given to a tenant whose work was not the oldest waiting."),
		overtak: d("frontdoor_stage_expired_overtaken_total", "Fair order: work passed over by another tenant's turn that then expired (refusals fair order caused)."),
	}
}

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.minLat, c.lat, c.changes, c.skips, c.overtak} {
		ch <- d
	}
}

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.ScrapeStages() {
		sn := st.Snapshot
		m := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, st.Name)
		}
		m(c.limit, prometheus.GaugeValue, float64(sn.Limits.Slots))
		if sn.Limits.Order == stages.Fair {
			m(c.skips, prometheus.CounterValue, float64(sn.Ledger.FairSkips))
			m(c.overtak, prometheus.CounterValue, float64(sn.Ledger.ExpiredOvertaken))
		}
		if a := sn.Adaptive; a != nil {
			m(c.minLat, prometheus.GaugeValue, a.Estimate.MinRTT.Seconds())
			m(c.lat, prometheus.GaugeValue, a.Estimate.RTT.Seconds())
			m(c.changes, prometheus.CounterValue, float64(a.Changes))
		}
	}
}
