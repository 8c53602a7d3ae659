package session

import (
	"sync"
	"time"
)

// firstSentence estimates how long the model takes from its admission to
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
type firstSentence struct {
	mu        sync.Mutex
	n         int
	mean, dev time.Duration
}

// observe adds one turn's time from model admission to first sentence,
// counted at most as limit (the synthesis stage's max wait): a sentence
// later than the whole budget is too late by any measure, and one model
// that hung for a minute must not shut the stage for the turns after it.
func (f *firstSentence) observe(d, limit time.Duration) {
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

// minSamples is how many turns are measured before the estimate is used:
// a model's first replies (a cold start, a cache filling) say little of
// its pace.
const minSamples = 8

// estimate is mean + 2 deviations, 0 before minSamples turns were
// measured.
func (f *firstSentence) estimate() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n < minSamples {
		return 0
	}
	return f.mean + 2*f.dev
}

// minModelWait is the least a turn may wait for the model however slow
// its first sentence has been: the estimate is only renewed by turns that
// run, so it must never shut the stage.
const minModelWait = 250 * time.Millisecond

// modelDeadline is the last instant a turn born at born is worth
// admitting to the model (stages.Job.Deadline): the model stage's own
// max wait, or earlier when the model's first sentence, at its recent
// pace, would come too late for the synthesis stage's; zero when the
// stage's max wait decides.
func (s *Engine) modelDeadline(born time.Time) time.Time {
	est := s.firstSentence.estimate()
	if est == 0 {
		return time.Time{}
	}
	modelWait := s.cfg.Model.MaxAge
	useful := max(s.cfg.Synthesis.MaxAge-est, min(minModelWait, modelWait))
	if useful >= modelWait {
		return time.Time{}
	}
	return born.Add(useful)
}
