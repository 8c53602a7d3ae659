package admit

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// AdaptiveConfig bounds and tunes an adaptive slot limit (Adaptive). Zero
// fields take the defaults noted.
type AdaptiveConfig struct {
	Min int `json:"min"` // lowest limit; >= 1
	Max int `json:"max"` // highest limit; >= Min
	// Initial is the limit before anything is measured (0: Min): starting
	// low and probing up never floods a backend of unknown capacity.
	Initial int `json:"initial"`
	// Window is how often the limit may change (0: 500ms): the samples of
	// one window decide one step.
	Window time.Duration `json:"window_ns"`
	// MinSamples is how many latencies a window needs before its latency
	// moves the limit (0: 4); overload errors move it with any number.
	MinSamples int `json:"min_samples"`
	// Tolerance is how far above the measured minimum a window's median
	// latency may be while the limit still probes up (0: 1.25): at or under
	// it the backend is not queueing the work frontdoor sends it.
	Tolerance float64 `json:"tolerance"`
	// Backoff multiplies the limit after a window with an overload error,
	// a 429 or 503 from the backend (0: 0.7).
	Backoff float64 `json:"backoff"`
	// MinWindows is how many windows the minimum latency is measured over
	// (0: 40, 20 s at the default window): long enough to see the backend
	// unloaded once in a while, short enough to follow a backend swapped
	// for a slower one.
	MinWindows int `json:"min_windows"`
}

// ErrAdaptive reports an AdaptiveConfig out of range.
var ErrAdaptive = fmt.Errorf("%w: adaptive bounds", ErrLimits)

func (c AdaptiveConfig) withDefaults() (AdaptiveConfig, error) {
	if c.Min < 1 || c.Max < c.Min || c.Initial < 0 || c.Window < 0 || c.MinSamples < 0 ||
		c.Tolerance < 0 || c.Backoff < 0 || c.Backoff >= 1 || c.MinWindows < 0 ||
		math.IsNaN(c.Tolerance) || math.IsNaN(c.Backoff) {
		return c, fmt.Errorf("%w: %+v (need 1 <= Min <= Max, 0 <= Backoff < 1)", ErrAdaptive, c)
	}
	if c.Initial == 0 {
		c.Initial = c.Min
	}
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.Window == 0 {
		c.Window = 500 * time.Millisecond
	}
	if c.MinSamples == 0 {
		c.MinSamples = 4
	}
	if c.Tolerance < 1 {
		c.Tolerance = 1.25
	}
	if c.Backoff == 0 {
		c.Backoff = 0.7
	}
	if c.MinWindows == 0 {
		c.MinWindows = 40
	}
	return c, nil
}

// maxSamples bounds the latencies one window keeps: the first ones of a
// window are as good an estimate of its median as all of them, and memory
// stays fixed whatever the rate.
const maxSamples = 256

// Adaptive is the rule that moves a stage's slot limit with the latency the
// backend shows to the stage's useful signal (first token for a model,
// first audio for synthesis, a result for recognition), in the manner of
// Envoy's adaptive concurrency filter and Netflix's Gradient2: once a
// window, the gradient of the measured minimum latency (times a tolerance)
// over the window's median scales the limit down, never below half; a
// backend within tolerance and kept busy gets the square root of the limit
// more to probe with; an overload error (429, 503) cuts it by Backoff. The
// limit never leaves [Min, Max].
//
// It is pure: time is given (Observe, Tick), nothing runs on its own, and it
// is not safe for concurrent use (AdaptiveGate serializes it).
type Adaptive struct {
	cfg   AdaptiveConfig
	limit float64

	start      time.Time // of the current window; zero before the first sample
	samples    []time.Duration
	overloaded int
	mins       ring[time.Duration] // per window median, the last MinWindows
	last       Estimate
}

// Estimate is what the rule knows after a window: shown to operators.
type Estimate struct {
	Limit    int           `json:"limit"`
	MinRTT   time.Duration `json:"min_latency_ns"`    // the measured minimum
	RTT      time.Duration `json:"window_latency_ns"` // the last window's median
	Gradient float64       `json:"gradient"`
	Samples  int           `json:"samples"`    // of the last window
	Overload int           `json:"overloaded"` // overload errors in the last window
	Reason   string        `json:"reason"`     // why it last moved: probe, latency, overload, sync
	At       time.Time     `json:"at"`
}

// NewAdaptive returns the rule at cfg's initial limit.
func NewAdaptive(cfg AdaptiveConfig) (*Adaptive, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Adaptive{cfg: cfg, limit: float64(cfg.Initial), mins: newRing[time.Duration](cfg.MinWindows),
		samples: make([]time.Duration, 0, maxSamples)}
	a.last.Limit = cfg.Initial
	return a, nil
}

// Config returns the configuration with defaults filled in.
func (a *Adaptive) Config() AdaptiveConfig { return a.cfg }

// Limit is the current limit, within [Min, Max].
func (a *Adaptive) Limit() int { return a.last.Limit }

// Estimate reports the rule's state after its latest window.
func (a *Adaptive) Estimate() Estimate { return a.last }

// Sync adopts n as the limit (clamped to the bounds), as when the limit is
// shared through a store and another replica moved it.
func (a *Adaptive) Sync(n int) {
	n = min(max(n, a.cfg.Min), a.cfg.Max)
	a.limit, a.last.Limit = float64(n), n
}

// Observe adds one latency to the useful signal, measured from the lease;
// overloaded marks a backend's overload error (its latency is not used).
// When now closes the window, the limit moves: Observe returns the new
// limit and true when it changed. demand is the work leased and queued in
// the stage now, so that an idle stage does not probe up for nothing.
func (a *Adaptive) Observe(now time.Time, latency time.Duration, overloaded bool, demand int) (int, bool) {
	if a.start.IsZero() {
		a.start = now
	}
	switch {
	case overloaded:
		a.overloaded++
	case latency > 0 && len(a.samples) < maxSamples:
		a.samples = append(a.samples, latency)
	}
	return a.Tick(now, demand)
}

// restart begins a new window at now, dropping the samples of the last.
func (a *Adaptive) restart(now time.Time) {
	a.start, a.samples, a.overloaded = now, a.samples[:0], 0
}

// due reports whether an observation at now closes the window.
func (a *Adaptive) due(now time.Time) bool {
	return !a.start.IsZero() && now.Sub(a.start) >= a.cfg.Window
}

// Tick closes the window if now is past it and moves the limit; it returns
// the limit and whether it changed.
func (a *Adaptive) Tick(now time.Time, demand int) (int, bool) {
	if !a.due(now) {
		return a.last.Limit, false
	}
	before := a.last.Limit
	a.step(now, demand)
	a.start, a.samples, a.overloaded = now, a.samples[:0], 0
	return a.last.Limit, a.last.Limit != before
}

func (a *Adaptive) step(now time.Time, demand int) {
	e := Estimate{MinRTT: a.last.MinRTT, RTT: a.last.RTT, Gradient: a.last.Gradient, Samples: len(a.samples),
		Overload: a.overloaded, At: now, Reason: a.last.Reason}
	limit := a.limit
	switch {
	case a.overloaded > 0:
		limit *= a.cfg.Backoff
		e.Reason = "overload"
	case len(a.samples) >= a.cfg.MinSamples:
		slices.Sort(a.samples)
		rtt := a.samples[len(a.samples)/2]
		if a.mins.len() == len(a.mins.buf) {
			a.mins.pop()
		}
		a.mins.push(rtt)
		minRTT := rtt
		for i := 0; i < a.mins.len(); i++ {
			minRTT = min(minRTT, a.mins.at(i))
		}
		g := min(1, max(0.5, a.cfg.Tolerance*float64(minRTT)/float64(rtt)))
		e.MinRTT, e.RTT, e.Gradient = minRTT, rtt, g
		if g < 1 {
			// Halfway to the gradient's limit: the window's latency is of
			// work admitted under the limit before, so a full step would
			// overshoot and oscillate.
			limit *= (1 + g) / 2
			e.Reason = "latency"
		} else if float64(demand) >= limit/2 {
			// Within tolerance and in use: probe for more, as Gradient2's
			// queue size and Envoy's headroom do.
			limit += math.Sqrt(limit)
			e.Reason = "probe"
		}
	}
	a.limit = min(max(limit, float64(a.cfg.Min)), float64(a.cfg.Max))
	e.Limit = int(a.limit)
	a.last = e
}
