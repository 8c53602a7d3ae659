package admit

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestAdaptiveBounds: whatever latencies, overloads, demand and time the
// rule is given, its limit never leaves [Min, Max] and changes only when a
// window closes.
func TestAdaptiveBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.IntRange(1, 20).Draw(t, "min")
		cfg := AdaptiveConfig{
			Min:        lo,
			Max:        rapid.IntRange(lo, 64).Draw(t, "max"),
			Initial:    rapid.IntRange(0, 80).Draw(t, "initial"),
			Window:     time.Duration(rapid.IntRange(0, 2000).Draw(t, "windowms")) * time.Millisecond,
			MinSamples: rapid.IntRange(0, 5).Draw(t, "minSamples"),
			Tolerance:  rapid.Float64Range(0, 3).Draw(t, "tolerance"),
			Backoff:    rapid.Float64Range(0, 0.99).Draw(t, "backoff"),
			MinWindows: rapid.IntRange(0, 5).Draw(t, "minWindows"),
		}
		a, err := NewAdaptive(cfg)
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		t.Repeat(map[string]func(*rapid.T){
			"observe": func(t *rapid.T) {
				lat := time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "lat"))
				before := a.Limit()
				n, changed := a.Observe(now, lat, rapid.IntRange(0, 9).Draw(t, "over") == 0, rapid.IntRange(0, 100).Draw(t, "demand"))
				if n != a.Limit() || changed != (n != before) {
					t.Fatalf("Observe = %d %v; limit %d before %d", n, changed, a.Limit(), before)
				}
			},
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond)
				a.Tick(now, rapid.IntRange(0, 100).Draw(t, "demand"))
			},
			"sync": func(t *rapid.T) { a.Sync(rapid.IntRange(-5, 100).Draw(t, "n")) },
			"": func(t *rapid.T) {
				c := a.Config()
				if l := a.Limit(); l < c.Min || l > c.Max || l != a.Estimate().Limit {
					t.Fatalf("limit %d outside [%d, %d] (estimate %+v)", l, c.Min, c.Max, a.Estimate())
				}
			},
		})
	})
}

func TestAdaptiveConfigInvalid(t *testing.T) {
	for _, c := range []AdaptiveConfig{{Min: 0, Max: 4}, {Min: 5, Max: 4}, {Min: 1, Max: 4, Backoff: 1}, {Min: 1, Max: 4, Tolerance: math.NaN()}} {
		if _, err := NewAdaptive(c); err == nil {
			t.Errorf("NewAdaptive(%+v) accepted", c)
		}
	}
}

// shared is a processor-sharing backend in the manner of a GPU server: up to
// k requests at full speed, more each slowed by n/k, so that its latency to
// the first token is base·max(1, n/k) and its throughput k/base at most.
func shared(base time.Duration, k, n float64) time.Duration {
	return time.Duration(float64(base) * max(1, n/k))
}

// TestAdaptiveFollowsCapacity runs the rule in closed loop against a backend
// whose capacity steps 10 -> 4 -> 15 jobs at full speed, with demand above
// every limit: within ten windows (5 s) of each step the limit is within
// [k, 2.5k], so the backend is kept busy and its latency at most 2.5 times its
// minimum; and the limit never leaves its bounds.
func TestAdaptiveFollowsCapacity(t *testing.T) {
	a, err := NewAdaptive(AdaptiveConfig{Min: 1, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	base := 500 * time.Millisecond
	now := t0
	for _, k := range []float64{10, 4, 15} {
		for w := range 40 {
			n := float64(a.Limit())
			for range 10 {
				now = now.Add(a.Config().Window / 10)
				a.Observe(now, shared(base, k, n), false, 1000)
			}
			if w >= 10 {
				if l := float64(a.Limit()); l < k || l > 2.5*k {
					t.Fatalf("capacity %v, window %d: limit %v not in [k, 2.5k] (%+v)", k, w, l, a.Estimate())
				}
			}
		}
	}
}

// TestAdaptiveOverload: an overload error cuts the limit by Backoff at the
// window's end, latency notwithstanding, and an idle stage does not probe.
func TestAdaptiveOverload(t *testing.T) {
	a, err := NewAdaptive(AdaptiveConfig{Min: 2, Max: 40, Initial: 20, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a.Observe(t0, 100*time.Millisecond, false, 0)
	a.Observe(t0.Add(100*time.Millisecond), 0, true, 0)
	if n, changed := a.Observe(t0.Add(time.Second), 100*time.Millisecond, false, 100); !changed || n != 14 {
		t.Fatalf("after an overload: %d %v, want 14", n, changed)
	}
	if e := a.Estimate(); e.Reason != "overload" || e.Overload != 1 {
		t.Fatalf("estimate %+v", e)
	}
	for i := range 5 { // fast but idle: stays
		now := t0.Add(time.Duration(2+i) * time.Second)
		for range 5 {
			a.Observe(now, 100*time.Millisecond, false, 1)
		}
	}
	if a.Limit() != 14 {
		t.Fatalf("idle stage probed to %d", a.Limit())
	}
}
