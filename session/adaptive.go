package session

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The engine's side of adaptive stage limits (stages.NewAdaptiveGate): it
// feeds each stage's gate, when the gate is an observer, the latency
// of the stage's useful signal measured from the lease (the model's first
// token, each sentence's first audio, a recognition's result) and the
// backend's overload errors (429, 503: backend.ErrOverloaded). A gate with
// a fixed limit is not an observer, and nothing is measured for it.

// latencyObserver is a gate with an adaptive limit (stages.NewAdaptiveGate's).
type latencyObserver interface {
	Observe(latency time.Duration, overloaded bool)
}

// observe feeds the stage's gate one latency, or an overload error.
func (s *stage) observe(latency time.Duration, overloaded bool) {
	if o, ok := s.gate.(latencyObserver); ok {
		o.Observe(latency, overloaded)
	}
}

// observeHeld feeds what a lease's whole hold says: an overload error on
// any stage, and the recognition stage's result, whose signal is the
// work's end (the others signal from inside their work).
func (s *stage) observeHeld(ctx context.Context, since time.Time, err error) {
	switch {
	case errors.Is(err, backend.ErrOverloaded):
		s.observe(0, true)
	case err == nil && ctx.Err() == nil && s.name == StageRecognize:
		s.observe(s.clock.Now().Sub(since), false)
	}
}

// firstSignal returns a function that, called at each piece of a
// backend's output, feeds the stage the latency from now (the lease) to
// the first piece, once.
func (s *stage) firstSignal() func() {
	start, seen := s.clock.Now(), false
	return func() {
		if !seen {
			seen = true
			s.observe(s.clock.Now().Sub(start), false)
		}
	}
}

// limitCollector exports, at scrape time, each stage's slot limit in force
// and, for an adaptive limit, its estimate and moves; and the turns Fair
// order gave and the refusals (expiries) it caused.
type limitCollector struct {
	s                                           *Engine
	limit, minLat, lat, changes, skips, overtak *prometheus.Desc
}

func newLimitCollector(s *Engine) *limitCollector {
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
	for _, st := range c.s.stageList() {
		sn := c.s.snapshot(st)
		m := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, st.name)
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
