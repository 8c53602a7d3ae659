// Package prompt is the table of sentences a caller hears about an outcome
// (work refused, expired, failed or queued at a stage, a callback booked, a
// person found) and the fallbacks each may offer. Texts never claim that
// refused work is in progress, never say work that never started was
// stopped, and never promise a callback the store has not accepted.
// docs/PROMPTS.md is generated from it. The call engine and the fallback
// queues both speak from it, so it depends on neither.
package prompt

import (
	"fmt"
	"slices"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Kind is a fallback a caller can be offered.
type Kind string

// The fallbacks.
const (
	KindCallback Kind = "callback"
	KindHandoff  Kind = "handoff"
)

// Stages a prompt can be about. The first four are the session server's
// stages; the last two are the fallbacks themselves.
const (
	StageSession   = "session"
	StageRecognize = "recognize"
	StageModel     = "model"
	StageSynthesis = "synthesis"
	StageCallback  = "callback"
	StageHandoff   = "handoff"
	// StageOffer is the offer itself, answered in words: an answer
	// not understood, declined, or one that cannot be taken by voice.
	StageOffer = "offer"
)

// Reasons of StageOffer's prompts.
const (
	ReasonUnheard    = "unheard"    // an answer not understood: the offer is made again, once
	ReasonUnanswered = "unanswered" // still not understood: nothing is arranged and the call ends
	ReasonDeclined   = "declined"   // "no thanks": nothing is arranged
	ReasonNoNumber   = "no-number"  // "call me back" without a number to call
)

// ReasonFailed is the Prompt.Reason when a fallback could not be established
// because something failed (the callback store refused a write, say), as
// opposed to a disposition of its stage.
const ReasonFailed = "failed"

// Prompt is a sentence for the caller about one outcome, and the fallbacks
// it offers. Offer lists only kinds that were available when it was made;
// the server sends it as the `offer` message after the `prompt`.
type Prompt struct {
	Reason  string // a disposition name ("overloaded", "expired", ...) or ReasonFailed
	Stage   string
	Started bool // the prompt is about work whose backend had started (Outcome.Started)
	Partial bool // the caller heard part of the reply (Outcome.Partial)
	Text    string
	Offer   []Kind
}

// Outcome is what happened to the work a prompt is about: the stage, the
// disposition it ended with (or ReasonFailed), and whether that stage's
// backend had started on it. A refusal (overloaded, expired, closed, stale,
// out-of-order) never started, since stages refuse or expire only work
// that is still queued; a failure may have (the backend failed while it
// worked) or not (the store could not admit the work).
type Outcome struct {
	Stage   string
	Reason  string
	Started bool
	// Partial: the caller heard part of the reply before the rest was
	// refused or failed; what was said stands, and the prompt says that
	// the rest was lost, not that nothing was answered.
	Partial bool
}

// entry is one row of the table: the sentence that states the outcome, the
// fallbacks it may offer, and the closing sentence when none is offered.
type entry struct {
	stage, reason string
	started       bool
	text          string
	may           []Kind
	none          string
}

var (
	both         = []Kind{KindCallback, KindHandoff}
	callbackOnly = []Kind{KindCallback}
	handoffOnly  = []Kind{KindHandoff}
)

const (
	tryLater  = "Please try again in a few minutes."
	continueQ = "Would you like to carry on?"
	askAgain  = "Please ask again in a moment."
	sayAgain  = "Please say it again in a moment."
)

// table is the prompt table, keyed by stage, reason and whether the
// stage's backend had started. Texts never claim that refused or expired
// work is still in progress, never say that work which never started was
// stopped, and never say a callback is booked before the store accepted
// it: the callback/queued row is used only after that.
var table = []entry{
	{StageSession, "queued", false, "All of our lines are busy, so you are waiting in line. I will be with you as soon as one is free.", nil, ""},
	{StageSession, "overloaded", false, "All of our lines are busy and the waiting line is full, so I cannot take your call right now.", both, tryLater},
	{StageSession, "expired", false, "I am sorry, no line came free while you waited, so I cannot take your call right now.", both, tryLater},
	{StageSession, "closed", false, "This service is temporarily unavailable.", callbackOnly, tryLater},
	{StageSession, ReasonFailed, false, "Something went wrong on our side, so I cannot take your call right now.", callbackOnly, tryLater},

	{StageRecognize, "overloaded", false, "I could not process what you just said, because the system is busy. Nothing was done with it.", both, sayAgain},
	{StageRecognize, "expired", false, "I could not get to what you just said in time, so nothing was done with it.", both, continueQ},
	{StageRecognize, "closed", false, "This service is temporarily unavailable, so I cannot process what you say.", callbackOnly, tryLater},
	{StageRecognize, "stale", false, "What you said belonged to an earlier part of our conversation, so nothing was done with it.", nil, ""},
	{StageRecognize, "out-of-order", false, "What you said arrived out of order, so nothing was done with it.", nil, sayAgain},
	{StageRecognize, ReasonFailed, false, "Something went wrong on our side, so I could not process what you just said. Nothing was done with it.", both, sayAgain},
	{StageRecognize, ReasonFailed, true, "Something went wrong on our side while I was listening to what you said, so nothing was done with it.", both, sayAgain},

	{StageModel, "overloaded", false, "I cannot answer that right now, because the system is busy. I have not started working on it.", both, askAgain},
	{StageModel, "expired", false, "I could not get to your question in time, so I have not worked on it.", both, continueQ},
	{StageModel, "closed", false, "This service is temporarily unavailable, so I cannot answer that.", callbackOnly, tryLater},
	{StageModel, "stale", false, "That belonged to an earlier part of our conversation, so I did not start on it.", nil, ""},
	{StageModel, "out-of-order", false, "That arrived out of order, so I did not start on it.", nil, askAgain},
	{StageModel, ReasonFailed, false, "Something went wrong on our side, so I could not start on your question.", both, askAgain},
	{StageModel, ReasonFailed, true, "Something went wrong on our side while I was answering that, so I stopped.", both, askAgain},

	{StageSynthesis, "overloaded", false, "I have an answer but cannot speak it right now, because the system is busy.", both, askAgain},
	{StageSynthesis, "expired", false, "I have an answer, but I could not get to speaking it in time.", both, continueQ},
	{StageSynthesis, "closed", false, "This service is temporarily unavailable, so I cannot speak my answer.", callbackOnly, tryLater},
	{StageSynthesis, "stale", false, "I had an answer, but it belonged to an earlier part of our conversation, so I did not speak it.", nil, ""},
	{StageSynthesis, "out-of-order", false, "I had an answer, but it arrived out of order, so I did not speak it.", nil, askAgain},
	{StageSynthesis, ReasonFailed, false, "I have an answer, but something went wrong on our side, so I could not speak it.", both, askAgain},
	{StageSynthesis, ReasonFailed, true, "Something went wrong on our side while I was speaking my answer, so I stopped.", both, askAgain},

	{StageCallback, "queued", false, "Your callback is booked. We will call you back at the number you gave.", nil, ""},
	{StageCallback, "overloaded", false, "Our callback list is full, so I could not book a callback. Nothing has been scheduled.", handoffOnly, tryLater},
	{StageCallback, "closed", false, "Callbacks are temporarily unavailable, so I could not book one. Nothing has been scheduled.", handoffOnly, tryLater},
	{StageCallback, ReasonFailed, false, "Something went wrong on our side and I could not book a callback. Nothing has been scheduled.", handoffOnly, tryLater},

	{StageHandoff, "queued", false, "I am looking for a person to take your call. Please stay on the line.", nil, ""},
	{StageHandoff, "completed", false, "A person has taken your call and is joining now.", nil, ""},
	{StageHandoff, "overloaded", false, "Everyone who could take your call is busy and the waiting line is full, so I could not find you a person.", callbackOnly, tryLater},
	{StageHandoff, "expired", false, "I am sorry, no one was free to take your call in time, so I have stopped looking.", callbackOnly, tryLater},
	{StageHandoff, "closed", false, "Transfers to a person are temporarily unavailable.", callbackOnly, tryLater},
	{StageHandoff, ReasonFailed, false, "Something went wrong on our side and I could not find you a person.", callbackOnly, tryLater},

	{StageOffer, ReasonUnheard, false, "I am sorry, I did not understand your answer.", both, ""},
	{StageOffer, ReasonUnanswered, false, "I am sorry, I still did not understand, so I have not arranged anything.", nil, tryLater},
	{StageOffer, ReasonDeclined, false, "All right, I have not arranged anything.", nil, ""},
	{StageOffer, ReasonNoNumber, false, "I cannot book a callback from what you said, because I have no number to call you back on. You can enter your number instead.", handoffOnly, ""},
}

// partial is the table for replies the caller heard part of before the
// rest was refused or failed (Outcome.Partial): what was said stands, so
// the sentence says the rest was lost, never that nothing was answered.
var partial = []entry{
	{StageModel, ReasonFailed, true, "Something went wrong on our side while I was answering, so I lost the rest of my answer.", both, askAgain},
	{StageSynthesis, "overloaded", false, "I am sorry, I lost the rest of my answer, because the system is busy.", both, askAgain},
	{StageSynthesis, "expired", false, "I am sorry, I lost the rest of my answer: I could not get to speaking it in time.", both, continueQ},
	{StageSynthesis, "closed", false, "This service has become temporarily unavailable, so I cannot finish my answer.", callbackOnly, tryLater},
	{StageSynthesis, ReasonFailed, false, "Something went wrong on our side, so I lost the rest of my answer.", both, askAgain},
	{StageSynthesis, ReasonFailed, true, "Something went wrong on our side while I was speaking, so I lost the rest of my answer.", both, askAgain},
}

// Offer sentences, by the kinds actually offered.
const (
	offerBoth     = "I can arrange for us to call you back, or put you through to a person. Which would you like?"
	offerCallback = "I can arrange for us to call you back. Would you like that?"
	offerHandoff  = "I can put you through to a person. Would you like that?"
	fallbackText  = "I cannot do that right now."
	partialText   = "I am sorry, I lost the rest of my answer."
)

// For returns the prompt for disposition d at stage (work that was
// refused, expired or queued: its backend never started), offering only
// the fallbacks that the row allows and that are in available (pass
// fallback.Service.Available()). A combination outside the table gets a plain
// sentence that claims nothing and offers nothing.
func For(stage string, d stages.Disposition, available []Kind) Prompt {
	return Of(Outcome{Stage: stage, Reason: d.String()}, available)
}

// Failed returns the prompt for a fallback (StageCallback or
// StageHandoff) that could not be established because something failed: it
// says so, and offers only the other fallback.
func Failed(stage string, available []Kind) Prompt {
	return Of(Outcome{Stage: stage, Reason: ReasonFailed}, available)
}

// Of returns the prompt for o, offering only the fallbacks that its
// row allows and that are in available. An outcome outside the table gets
// a plain sentence that claims nothing and offers nothing.
func Of(o Outcome, available []Kind) Prompt {
	rows := table
	if o.Partial {
		rows = partial
	}
	for _, e := range rows {
		if e.stage == o.Stage && e.reason == o.Reason && e.started == o.Started {
			p := e.prompt(available)
			p.Partial = o.Partial
			return p
		}
	}
	p := Prompt{Reason: o.Reason, Stage: o.Stage, Started: o.Started, Text: fallbackText}
	if o.Partial {
		p.Partial, p.Text = true, partialText
	}
	return p
}

func (e entry) prompt(available []Kind) Prompt {
	var offer []Kind
	for _, k := range e.may {
		if slices.Contains(available, k) {
			offer = append(offer, k)
		}
	}
	p := Prompt{Reason: e.reason, Stage: e.stage, Started: e.started, Text: e.text, Offer: offer}
	switch {
	case len(offer) == 2:
		p.Text += " " + offerBoth
	case len(offer) == 1 && offer[0] == KindCallback:
		p.Text += " " + offerCallback
	case len(offer) == 1:
		p.Text += " " + offerHandoff
	case e.none != "":
		p.Text += " " + e.none
	}
	return p
}

// All returns every prompt the table can produce, for every subset
// of available fallbacks, without duplicates: the fixed texts that
// fallback.PromptAudio renders ahead of time and docs/PROMPTS.md lists.
func All() []Prompt {
	subsets := [][]Kind{nil, callbackOnly, handoffOnly, both}
	var out []Prompt
	seen := map[string]bool{}
	for _, tab := range []struct {
		rows    []entry
		partial bool
	}{{table, false}, {partial, true}} {
		for _, e := range tab.rows {
			for _, avail := range subsets {
				p := e.prompt(avail)
				p.Partial = tab.partial
				key := fmt.Sprint(p.Stage, "\x00", p.Reason, "\x00", p.Started, "\x00", p.Partial, "\x00", p.Text)
				if !seen[key] {
					seen[key] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}
