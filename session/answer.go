package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Spoken answers to an offer. While a call's offer waits for its answer
// (the Fallback's Listening, or a phone menu's: Capabilities.Listening),
// each utterance the caller ends goes first to the answer recognizer
// (Config.Answers): a recognizer of the offer's few answers ("call me
// back", "a person", "no thanks"), not the conversation's. It is not a
// stage and takes no lease: a refused caller answering an offer needs no
// slot of the recognition stage that may be what refused it, and an
// answer is a second or two of speech that a small grammar decodes in a
// fraction of a second. What bounds it instead:
//
//   - AnswerSlots recognitions at once across the engine (default
//     DefaultAnswerSlots); an utterance that finds none free is not heard
//     as an answer (in a conversation it goes on as a turn; a refused
//     caller is told it was not caught, as when recognition fails);
//   - one at a time per call: an utterance ended while the call's previous
//     answer is being recognized is left out the same way;
//   - MaxAnswerAudio of speech: a longer utterance is no answer;
//   - answerTimeout for the recognition itself, on the wall clock (the
//     recognizer is a process).
//
// The transcript then goes where a turn's would (the transport's Answer,
// else the Fallback's SpokenAnswer) and an answer to the Fallback's
// Message. In a conversation an utterance that answers nothing goes on as
// a speech turn, through the recognition stage as usual; a refused call
// has no conversation, and there the Fallback (or the phone's menu) is
// told of the miss by the answer it returns, so that it asks again once
// and then ends the call.

// DefaultAnswerSlots is how many answers are recognized at once when
// Config.AnswerSlots is 0.
const DefaultAnswerSlots = 2

// MaxAnswerAudio bounds the speech of one answer: an offer's answers are a
// few words.
const MaxAnswerAudio = 5 * time.Second

// answerTimeout bounds one answer's recognition.
const answerTimeout = 3 * time.Second

// answerGate is the engine's bound on answer recognitions.
type answerGate struct {
	rec   backend.Recognizer // nil: answers are heard only in turns
	slots chan struct{}
}

func newAnswerGate(cfg Config) answerGate {
	if cfg.Answers == nil {
		return answerGate{}
	}
	n := cfg.AnswerSlots
	if n <= 0 {
		n = DefaultAnswerSlots
	}
	return answerGate{rec: cfg.Answers, slots: make(chan struct{}, n)}
}

// HearsAnswers reports whether the engine has an answer recognizer: a
// refused call's offer can then be answered in words (a keyless phone
// line's menu is offered only then).
func (s *Engine) HearsAnswers() bool { return s.ans.rec != nil }

// callAnswers is a call's answer recognition.
type callAnswers struct {
	busy atomic.Bool    // an answer of this call is being recognized
	wg   sync.WaitGroup // its goroutine, waited for by end
}

// listening reports whether the call's offer waits for a spoken answer
// that the answer recognizer should hear.
func (c *Call) listening() bool {
	if c.s.ans.rec == nil {
		return false
	}
	if c.caps.Listening != nil {
		return c.caps.Listening()
	}
	return c.s.cfg.Fallback.Listening(c.id)
}

// takeAnswer starts recognizing u as an answer to the call's open offer
// and reports whether it did. An utterance it does not take goes on as a
// turn in a conversation and is dropped in a refused call, but for one
// that finds every answer slot taken: a refused caller is then told the
// answer was not caught, as when the recognizer fails.
func (c *Call) takeAnswer(u backend.Audio, admitted bool, spoke time.Time) bool {
	if u.Duration() > MaxAnswerAudio || !c.ans.busy.CompareAndSwap(false, true) {
		return false
	}
	slot := true
	select {
	case c.s.ans.slots <- struct{}{}:
	default:
		c.log.Debug("answer recognizer busy: utterance not heard as an answer")
		if admitted {
			c.ans.busy.Store(false)
			return false
		}
		slot = false
	}
	c.mu.Lock()
	if c.phase == phaseEnded {
		c.mu.Unlock()
		if slot {
			<-c.s.ans.slots
		}
		c.ans.busy.Store(false)
		return false
	}
	c.ans.wg.Add(1)
	c.mu.Unlock()
	// u's samples are the listener's own until the next utterance
	// (listener.feed): the goroutine works on a copy.
	u.Samples = append([]int16(nil), u.Samples...)
	go func() {
		defer c.ans.wg.Done()
		text, err := "", errAnswerSlots
		if slot {
			text, err = c.recognizeAnswer(u)
			<-c.s.ans.slots
		}
		c.ans.busy.Store(false)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("answer recognizer", "err", err)
			if admitted {
				c.asTurn(u, spoke)
				return
			}
			// A refused caller spoke and the words were not caught: they
			// are told so and asked again, as for words that answer
			// nothing, not left in silence until the offer's wait ends.
			c.answerHeard("", u, false, spoke)
			return
		}
		c.answerHeard(text, u, admitted, spoke)
	}()
	return true
}

// errAnswerSlots: every answer slot of the engine was taken.
var errAnswerSlots = errors.New("session: answer recognizer busy (AnswerSlots taken)")

func (c *Call) recognizeAnswer(u backend.Audio) (string, error) {
	ctx, cancel := context.WithTimeout(c.ctx, answerTimeout)
	defer cancel()
	return c.s.ans.rec.Recognize(ctx, u)
}

// answerHeard hands the answer recognizer's transcript to whoever takes
// answers, as recognize does a turn's: an answer goes to the Fallback; in
// a conversation anything else goes on as a speech turn.
func (c *Call) answerHeard(text string, u backend.Audio, admitted bool, spoke time.Time) {
	var ev wire.ClientEvent
	var ok bool
	if c.caps.Answer != nil {
		ev, ok = c.caps.Answer(c.ctx, text)
	} else {
		ev, ok = c.s.cfg.Fallback.SpokenAnswer(c.id, text)
	}
	switch {
	case ok:
		c.log.Debug("spoken answer", "type", ev.Type)
		c.s.cfg.Fallback.Message(c.ctx, c.id, ev, c)
	case admitted:
		c.asTurn(u, spoke)
	}
}

// asTurn makes u the speech turn it would have been without an offer.
func (c *Call) asTurn(u backend.Audio, spoke time.Time) {
	if c.s.cfg.Recognizer == nil {
		return
	}
	if pe := c.enqueue(wire.TurnRequest{}, &u, spoke); pe != nil {
		c.badInput(pe)
	}
}

// EventUnanswered is the kind of event a Fallback's SpokenAnswer returns
// for an utterance of a refused call that answers nothing: given back to
// its Message with the call's Sender, it asks again or ends the wait. No
// client message decodes to it.
const EventUnanswered wire.EventKind = "unanswered"
