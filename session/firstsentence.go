package session

import "time"

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
	est := s.firstSentence.Estimate()
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
