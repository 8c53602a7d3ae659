// Package metrics holds the engine's own Prometheus instruments and the
// collectors that export its stages' snapshots and its calls at scrape
// time (the ledger stays the one source of truth for stage figures).
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the server's own instruments. Stage figures are not counted
// here: the stage collector (Register) reads them from each stage's
// Snapshot at scrape time, so the ledger is the one source of truth.
type Metrics struct {
	Sessions      prometheus.Gauge
	Calls         *prometheus.CounterVec
	BargeIns      prometheus.Counter
	Stale         prometheus.Counter
	BargeToLast   prometheus.Histogram
	SlowReaders   prometheus.Counter
	HeldRefusals  prometheus.Gauge
	ShedRefusals  prometheus.Counter
	ProtocolErrs  *prometheus.CounterVec
	OverdueTotal  *prometheus.CounterVec
	Turns         *prometheus.CounterVec
	BackendErrors *prometheus.CounterVec
	RotateErrors  *prometheus.CounterVec
	ViewErrors    *prometheus.CounterVec
	OutboundHigh  prometheus.Gauge
	// The backend quarantine's (package internal/admission).
	Quarantined       *prometheus.GaugeVec
	QuarantineRefused *prometheus.CounterVec

	highMu sync.Mutex
	high   float64
}

// NoteOutbound records an ended call's largest outbound queue.
func (m *Metrics) NoteOutbound(b int64) {
	m.highMu.Lock()
	defer m.highMu.Unlock()
	if v := float64(b); v > m.high {
		m.high = v
		m.OutboundHigh.Set(v)
	}
}

// New makes the instruments, registered on reg.
func New(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		Sessions: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_sessions",
			Help: "Connected calls, from upgrade until their backend work stopped."}),
		Calls: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_calls_total",
			Help: "Calls ended, by how they ended."}, []string{"end"}),
		BargeIns: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_barge_ins_total",
			Help: "Barge-ins: generation rotations in every stage."}),
		Stale: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_stale_chunks_suppressed_total",
			Help: "Outbound text and audio frames of an old generation dropped before writing."}),
		BargeToLast: f.NewHistogram(prometheus.HistogramOpts{Name: "frontdoor_barge_in_last_old_write_seconds",
			Help: "Time from a barge-in received to the last write of an older generation (0 when none followed).",
			// Fine below 5 ms, so that a p99 near the 1 ms target is visible.
			Buckets: []float64{0, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 7.5e-4, 1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1}}),
		SlowReaders: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_slow_readers_closed_total",
			Help: "Calls closed (1008) because the caller stopped reading."}),
		ShedRefusals: f.NewCounter(prometheus.CounterOpts{Name: "frontdoor_refusals_shed_total",
			Help: "Refusals told without an offer because refusals came faster than -shed-refusal-rate a second (the shedding rule)."}),
		HeldRefusals: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_refused_calls_held",
			Help: "Calls refused at the session stage held open for an answer to their offer (each holds its connection and reader only)."}),
		ProtocolErrs: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_protocol_errors_total",
			Help: "Bad client input answered with an error message, by code."}, []string{"code"}),
		OverdueTotal: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_cleanup_overdue_total",
			Help: "Cancelled leases whose cleanup exceeded the cleanup timeout (still held until the backend returned)."}, []string{"stage"}),
		Turns: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_turns_total",
			Help: "Turns ended, by outcome (turn_end disposition)."}, []string{"disposition"}),
		OutboundHigh: f.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_outbound_queue_high_water_bytes",
			Help: "Largest outbound queue of any ended call, in bytes (bounded by the outbound limit)."}),
		BackendErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_turn_backend_failures_total",
			Help: "Backend failures that ended a turn, by stage and kind."}, []string{"stage", "kind"}),
		RotateErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_rotate_errors_total",
			Help: "Generation rotations the stage's store could not make (tried again before the call's next work there)."}, []string{"stage"}),
		ViewErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_snapshot_errors_total",
			Help: "Stage snapshots that could not be read (the last one seen is shown, closed)."}, []string{"stage"}),

		Quarantined: f.NewGaugeVec(prometheus.GaugeOpts{Name: "frontdoor_stage_quarantined",
			Help: "1 while the stage's backend is quarantined (too many overdue cleanups in a row)."}, []string{"stage"}),
		QuarantineRefused: f.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_stage_quarantine_refused_total",
			Help: "Work refused closed because its stage's backend is quarantined."}, []string{"stage"}),
	}
}
