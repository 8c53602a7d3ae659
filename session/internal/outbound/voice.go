package outbound

import (
	"sync"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// A transport that speaks lines of its own (a phone's keypad menu and the
// outcome of its answer) says them through the call's writer like any
// prompt audio: frames marked Voice, queued with the premise of the
// message the line follows (SaysFor), so that one writer hands the line
// everything the caller hears, and a line spoken for a state of the call
// that is over is cut like the Fallback's prompts.

// SaysFor returns the premise a transport's line is spoken for: that of
// after, a message with a barrier or a prompt already queued, or the
// call's present one when after is nil. It returns ErrPremiseGone (and counts a cut)
// when after was queued for a state of the call that is over, or was
// never queued here.
func (o *Queue) SaysFor(after wire.Message) (uint64, error) {
	if o.premise == nil {
		return 0, nil // prompts are never cut
	}
	premise := o.premise.Load()
	if pm, ok := after.(*wire.PromptMsg); ok {
		// A prompt carries the premise it was queued under (wire.Stamp).
		if p := pm.Premise(); p == 0 || p != premise {
			o.nCut.Add(1)
			return 0, ErrPremiseGone
		}
		return premise, nil
	}
	if after != nil {
		p, ok := o.stamps.of(after)
		if !ok || p != premise {
			o.nCut.Add(1)
			return 0, ErrPremiseGone
		}
	}
	return premise, nil
}

// stamps remembers the premise of the last few messages with a barrier
// queued (wire.Barrier: the messages a transport follows with a line of
// its own), for SaysFor. A handful is plenty: a transport says a line right
// after the message it follows.
type stamps struct {
	mu   sync.Mutex
	ring [8]stamp
	next int
}

type stamp struct {
	msg     wire.Message
	premise uint64
}

// note records msg, queued while the call's premise was p, if it has a
// barrier.
func (s *stamps) note(msg wire.Message, p uint64) {
	if s == nil || barrierOf(msg) == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring[s.next] = stamp{msg: msg, premise: p}
	s.next = (s.next + 1) % len(s.ring)
}

// continues reports whether msg, a message that changes the call's
// state, is the sentence of the offer's outcome just queued (the prompt
// of the callback or handoff that the last FallbackMsg reported, with
// nothing queued between): it says the same state, so it does not move
// the premise, and a line a transport says after the outcome is not cut
// by the outcome's own prompt, whichever of the two is queued first.
// premise is the call's premise now.
func (s *stamps) continues(msg wire.Message, premise uint64) bool {
	pm, ok := msg.(*wire.PromptMsg)
	if s == nil || !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.ring[(s.next+len(s.ring)-1)%len(s.ring)]
	fm, ok := last.msg.(*wire.FallbackMsg)
	return ok && fm.Type == pm.Stage && last.premise == premise
}

// of returns the premise msg was queued under, if it is remembered.
func (s *stamps) of(msg wire.Message) (uint64, bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.ring {
		if st.msg == msg {
			return st.premise, true
		}
	}
	return 0, false
}

// HoldVoice counts a transport's line about to be queued (session's Voice.Keep):
// while any is, a closed queue takes its frames and its writer does not
// finish. Refused once nothing would write them: the queue was discarded,
// or closed with no writer left to drain it.
func (o *Queue) HoldVoice() (func(), bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped.Load() || (o.closed && !o.writing) {
		return func() {}, false
	}
	o.voices++
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			o.voices--
			o.mu.Unlock()
			signal(o.ready)
		})
	}, true
}

// finished reports, under mu, whether a closed queue is done with: no
// line a transport holds is still to come, or it was discarded.
func (o *Queue) finishedLocked() bool {
	return o.closed && (o.voices == 0 || o.dropped.Load())
}
