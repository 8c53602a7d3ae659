// Package meter holds the engine's running measures: the model's time to a
// reply's first sentence (FirstSentence) and the refusals of the last
// second (Shed).
package meter

import (
	"sync"
	"time"
)

// FirstSentence estimates how long the model takes from its admission to
// the end of a reply's first sentence, so that the model stage admits a
// turn only while that sentence can still reach synthesis within the
// turn's first-audio budget (Born + the synthesis stage's max wait).
// Without it a model stage whose queue may hold a turn for its whole max
// wait admits work whose first sentence is certain to expire: at 3x the
// model's capacity on default limits, all but a few turns did, the model's
// slots spent on replies nobody would hear (docs/BENCHMARKS.md section 8).
//
// The estimate is a mean and a mean deviation, each an exponentially
// weighted average of the turns measured (weight 1/8, as TCP's RTT
// estimator): mean + 2 deviations covers most turns without a sorted
// window.
type FirstSentence struct {
	mu        sync.Mutex
	n         int
	mean, dev time.Duration
}

// Observe adds one turn's time from model admission to first sentence,
// counted at most as limit (the synthesis stage's max wait): a sentence
// later than the whole budget is too late by any measure, and one model
// that hung for a minute must not shut the stage for the turns after it.
func (f *FirstSentence) Observe(d, limit time.Duration) {
	if limit > 0 {
		d = min(d, limit)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.mean, f.dev = d, d/2
	} else {
		diff := (d - f.mean).Abs()
		f.dev += (diff - f.dev) / 4
		f.mean += (d - f.mean) / 8
	}
	f.n++
}

// MinSamples is how many turns are measured before the estimate is used:
// a model's first replies (a cold start, a cache filling) say little of
// its pace.
const MinSamples = 8

// Estimate is mean + 2 deviations, 0 before MinSamples turns were
// measured.
func (f *FirstSentence) Estimate() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n < MinSamples {
		return 0
	}
	return f.mean + 2*f.dev
}
