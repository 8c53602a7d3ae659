package backend

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts backend calls and their failures per backend. Labels are
// only the backend name and the failure kind, so cardinality stays fixed.
type Metrics struct {
	requests *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// NewMetrics returns counters registered on reg (none if reg is nil):
// frontdoor_backend_requests_total{backend} and
// frontdoor_backend_failures_total{backend,kind}. Registering on a registry
// that already holds them reuses the existing counters.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_backend_requests_total",
			Help: "Backend calls, by backend, counted as they return.",
		}, []string{"backend"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_backend_failures_total",
			Help: "Backend calls that did not complete, by backend and kind " +
				"(overloaded, unavailable, stalled, malformed, rejected, canceled, deadline, emit, other).",
		}, []string{"backend", "kind"}),
	}
	if reg != nil {
		m.requests = register(reg, m.requests)
		m.failures = register(reg, m.failures)
	}
	return m
}

func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return old
			}
		}
	}
	return c
}

// Observe counts one call of backend that ended with err.
func (m *Metrics) Observe(backend string, err error) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(backend).Inc()
	if k := KindOf(err); k != KindOK {
		m.failures.WithLabelValues(backend, string(k)).Inc()
	}
}

// Requests returns the counter of calls for backend (for tests).
func (m *Metrics) Requests(backend string) prometheus.Counter {
	return m.requests.WithLabelValues(backend)
}

// Failures returns the counter of failures of kind for backend (for tests).
func (m *Metrics) Failures(backend string, kind Kind) prometheus.Counter {
	return m.failures.WithLabelValues(backend, string(kind))
}

// Model wraps mo so that each Reply is counted under name.
func (m *Metrics) Model(name string, mo Model) Model {
	return instrumentedModel{m, name, mo}
}

// Synthesizer wraps s so that each Synthesize is counted under name.
func (m *Metrics) Synthesizer(name string, s Synthesizer) Synthesizer {
	return instrumentedSynth{m, name, s}
}

// Recognizer wraps r so that each Recognize is counted under name.
func (m *Metrics) Recognizer(name string, r Recognizer) Recognizer {
	return instrumentedRecognizer{m, name, r}
}

type instrumentedModel struct {
	m    *Metrics
	name string
	Model
}

func (i instrumentedModel) Reply(ctx context.Context, t Turn, emit func(string) error) error {
	err := i.Model.Reply(ctx, t, emit)
	i.m.Observe(i.name, err)
	return err
}

type instrumentedSynth struct {
	m    *Metrics
	name string
	Synthesizer
}

func (i instrumentedSynth) Synthesize(ctx context.Context, text string, emit func(Audio) error) error {
	err := i.Synthesizer.Synthesize(ctx, text, emit)
	i.m.Observe(i.name, err)
	return err
}

type instrumentedRecognizer struct {
	m    *Metrics
	name string
	Recognizer
}

func (i instrumentedRecognizer) Recognize(ctx context.Context, a Audio) (string, error) {
	s, err := i.Recognizer.Recognize(ctx, a)
	i.m.Observe(i.name, err)
	return s, err
}
