package session

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the server's own instruments. Stage figures are not counted
// here: stageCollector reads them from each stage's Snapshot at scrape time,
// so the ledger is the one source of truth.
type metrics struct {
	sessions      prometheus.Gauge
	calls         *prometheus.CounterVec
	bargeIns      prometheus.Counter
	stale         prometheus.Counter
	bargeToLast   prometheus.Histogram
	slowReaders   prometheus.Counter
	heldRefusals  prometheus.Gauge
	shedRefusals  prometheus.Counter
	protocolErrs  *prometheus.CounterVec
	overdueTotal  *prometheus.CounterVec
	turns         *prometheus.CounterVec
	backendErrors *prometheus.CounterVec
	rotateErrors  *prometheus.CounterVec
	viewErrors    *prometheus.CounterVec
	outboundHigh  prometheus.Gauge
	quarantineMetrics

	highMu sync.Mutex
	high   float64
}

// noteOutbound records an ended call's largest outbound queue.
func (m *metrics) noteOutbound(b int64) {
	m.highMu.Lock()
	defer m.highMu.Unlock()
	if v := float64(b); v > m.high {
		m.high = v
		m.outboundHigh.Set(v)
	}
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		sessions: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_sessions",
			Help: "Connected calls, from upgrade until their backend work stopped."}),
		calls: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_calls_total",
			Help: "Calls ended, by how they ended."}, []string{"end"}),
		bargeIns: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_barge_ins_total",
			Help: "Barge-ins: generation rotations in every stage."}),
		stale: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_stale_chunks_suppressed_total",
			Help: "Outbound text and audio frames of an old generation dropped before writing."}),
		bargeToLast: f.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_barge_in_last_old_write_seconds",
			Help: "Time from a barge-in received to the last write of an older generation (0 when none followed).",
			// Fine below 5 ms, so that a p99 near the 1 ms target is visible.
			Buckets: []float64{0, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 7.5e-4, 1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1}}),
		slowReaders: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_slow_readers_closed_total",
			Help: "Calls closed (1008) because the caller stopped reading."}),
		shedRefusals: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_refusals_shed_total",
			Help: "Refusals told without an offer because refusals came faster than -shed-refusal-rate a second (the shedding rule)."}),
		heldRefusals: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_refused_calls_held",
			Help: "Calls refused at the session stage held open for an answer to their offer (each holds its connection and reader only)."}),
		protocolErrs: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_protocol_errors_total",
			Help: "Bad client input answered with an error message, by code."}, []string{"code"}),
		overdueTotal: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_cleanup_overdue_total",
			Help: "Cancelled leases whose cleanup exceeded the cleanup timeout (still held until the backend returned)."}, []string{"stage"}),
		turns: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_turns_total",
			Help: "Turns ended, by outcome (turn_end disposition)."}, []string{"disposition"}),
		outboundHigh: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_outbound_queue_high_water_bytes",
			Help: "Largest outbound queue of any ended call, in bytes (bounded by the outbound limit)."}),
		backendErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_turn_backend_failures_total",
			Help: "Backend failures that ended a turn, by stage and kind."}, []string{"stage", "kind"}),
		rotateErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_rotate_errors_total",
			Help: "Generation rotations the stage's store could not make (tried again before the call's next work there)."}, []string{"stage"}),
		viewErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_snapshot_errors_total",
			Help: "Stage snapshots that could not be read (the last one seen is shown, closed)."}, []string{"stage"}),
	}
}

// stageCollector exports every stage's Snapshot at scrape time.
type stageCollector struct {
	s *Engine

	dispositions, offered, depth, oldest, leases, slots, waitingCap, maxAge,
	cleanup, oldestCleanup, overdue, closed, takeErrors *prometheus.Desc
}

func newStageCollector(s *Engine) *stageCollector {
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
	for _, st := range c.s.stageList() {
		sn := c.s.snapshot(st)
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
			ch <- prometheus.MustNewConstMetric(c.dispositions, prometheus.CounterValue, float64(v), st.name, name)
		}
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.name)
		}
		ch <- prometheus.MustNewConstMetric(c.offered, prometheus.CounterValue, float64(l.Offered), st.name)
		ch <- prometheus.MustNewConstMetric(c.takeErrors, prometheus.CounterValue, float64(sn.TakeErrors), st.name)
		g(c.depth, float64(sn.Queued))
		g(c.oldest, sn.OldestQueued.Seconds())
		g(c.leases, float64(sn.Leased))
		g(c.slots, float64(sn.Limits.Slots))
		g(c.waitingCap, float64(sn.Limits.Waiting))
		g(c.maxAge, sn.Limits.MaxAge.Seconds())
		g(c.cleanup, float64(sn.CleanupPending))
		g(c.oldestCleanup, sn.OldestCleanup.Seconds())
		g(c.overdue, float64(st.overdue.Load()))
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
	s     *Engine
	calls *prometheus.Desc
}

func newTransportCollector(s *Engine) *transportCollector {
	return &transportCollector{s: s, calls: prometheus.NewDesc("frontdoor_sessions_by_transport",
		"Connected calls (frontdoor_sessions) by the transport that carries them (native, webrtc, twilio, ...; other when it declared none).",
		[]string{"transport"}, nil)}
}

func (c *transportCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.calls }

func (c *transportCollector) Collect(ch chan<- prometheus.Metric) {
	_, by := c.s.callCounts(true)
	for name, n := range by {
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.GaugeValue, float64(n), name)
	}
}
