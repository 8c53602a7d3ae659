package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/internal/answer"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Spoken answers to an offer (package internal/answer). While a call's
// offer waits for its answer (the Fallback's Listening, or a phone menu's:
// Capabilities.Listening), each utterance the caller ends goes first to
// the answer recognizer (Config.Answers), outside the recognition stage,
// bounded by Config.AnswerSlots. The transcript then goes where a turn's
// would (the transport's Answer, else the Fallback's SpokenAnswer) and an
// answer to the Fallback's Message.

// DefaultAnswerSlots is how many answers are recognized at once when
// Config.AnswerSlots is 0.
const DefaultAnswerSlots = answer.DefaultSlots

// MaxAnswerAudio bounds the speech of one answer: an offer's answers are a
// few words.
const MaxAnswerAudio = answer.MaxAudio

// EventUnanswered is the kind of event a Fallback's SpokenAnswer returns
// for an utterance of a refused call that answers nothing: given back to
// its Message with the call's Sender, it asks again or ends the wait. No
// client message decodes to it.
const EventUnanswered wire.EventKind = "unanswered"

// HearsAnswers reports whether the engine has an answer recognizer: a
// refused call's offer can then be answered in words (a keyless phone
// line's menu is offered only then).
func (s *Engine) HearsAnswers() bool { return s.ans.Hears() }

// listening reports whether the call's offer waits for a spoken answer
// that the answer recognizer should hear.
func (c *Call) listening() bool {
	if !c.s.ans.Hears() {
		return false
	}
	if c.caps.Listening != nil {
		return c.caps.Listening()
	}
	return c.s.cfg.Fallback.Listening(c.id)
}

// answerOf decodes text as an answer to the call's offer: the transport's
// menu hears answers in words where it has one; the Fallback otherwise.
func (c *Call) answerOf(ctx context.Context, text string) (wire.ClientEvent, bool) {
	if c.caps.Answer != nil {
		return c.caps.Answer(ctx, text)
	}
	return c.s.cfg.Fallback.SpokenAnswer(c.id, text)
}

// answerer is the call as its answer recognition sees it (answer.Call).
type answerer struct{ c *Call }

func (a answerer) Context() context.Context { return a.c.ctx }

func (a answerer) Answer(ctx context.Context, text string) (wire.ClientEvent, bool) {
	return a.c.answerOf(ctx, text)
}

func (a answerer) Answered(ev wire.ClientEvent) { a.c.s.cfg.Fallback.Message(a.c.ctx, a.c.id, ev, a.c) }

// AsTurn makes u the speech turn it would have been without an offer.
func (a answerer) AsTurn(u backend.Audio, spoke time.Time) {
	if a.c.s.cfg.Recognizer == nil {
		return
	}
	a.c.post(event{kind: evHeard, ev: wire.ClientEvent{Kind: wire.EventSpeech, Speech: u}, at: spoke})
}

// Hold implements Sender: while a Fallback refuses the call at the session
// stage, it keeps the call open after Refused returns, until release is
// called (the offer was answered), window has passed on the engine's
// clock, or the caller leaves; the call then closes as refused (1013),
// after the audio queued. Asked at any other time it does nothing: a
// call in conversation is not held (package internal/answer's Hold).
func (c *Call) Hold(window time.Duration) (release func()) {
	release, ok := c.hold.Start(c.ctx, c.s.cfg.Clock, window, func() { c.stop(errRefused) })
	if ok {
		c.s.m.HeldRefusals.Inc()
		context.AfterFunc(c.ctx, c.s.m.HeldRefusals.Dec)
	}
	return release
}
