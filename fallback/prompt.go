package fallback

import (
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

// Kinds lists every fallback in the order offers name them.
func Kinds() []Kind { return []Kind{KindCallback, KindHandoff} }

// Stages a prompt can be about. The first four are the session server's
// stages; the last two are the fallbacks themselves.
const (
	StageSession   = "session"
	StageRecognize = "recognize"
	StageModel     = "model"
	StageSynthesis = "synthesis"
	StageCallback  = "callback"
	StageHandoff   = "handoff"
)

// ReasonFailed is the Prompt.Reason when a fallback could not be established
// because something failed (the callback store refused a write, say), as
// opposed to a disposition of its stage.
const ReasonFailed = "failed"

// Prompt is a sentence for the caller about one outcome, and the fallbacks
// it offers. Offer lists only kinds that were available when it was made;
// the server sends it as the `offer` message after the `prompt`.
type Prompt struct {
	Reason string // a disposition name ("overloaded", "expired", ...) or ReasonFailed
	Stage  string
	Text   string
	Offer  []Kind
}

// entry is one row of the table: the sentence that states the outcome, the
// fallbacks it may offer, and the closing sentence when none is offered.
type entry struct {
	stage, reason string
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
)

// table is the prompt table. Texts never claim that refused or expired work
// is still in progress, and never say a callback is booked before the store
// accepted it: the callback/queued row is used only after that.
var table = []entry{
	{StageSession, "queued", "All of our lines are busy, so you are waiting in line. I will be with you as soon as one is free.", nil, ""},
	{StageSession, "overloaded", "All of our lines are busy and the waiting line is full, so I cannot take your call right now.", both, tryLater},
	{StageSession, "expired", "I am sorry, no line came free while you waited, so I cannot take your call right now.", both, tryLater},
	{StageSession, "closed", "This service is temporarily unavailable.", callbackOnly, tryLater},

	{StageRecognize, "overloaded", "I could not process what you just said, because the system is busy. Nothing was done with it.", both, "Please say it again in a moment."},
	{StageRecognize, "expired", "I took too long to process what you just said, so I stopped. Nothing was done with it.", both, continueQ},
	{StageRecognize, "closed", "This service is temporarily unavailable, so I cannot process what you say.", callbackOnly, tryLater},

	{StageModel, "overloaded", "I cannot answer that right now, because the system is busy. I have not started working on it.", both, "Please ask again in a moment."},
	{StageModel, "expired", "Answering that took too long, so I stopped working on it.", both, continueQ},
	{StageModel, "closed", "This service is temporarily unavailable, so I cannot answer that.", callbackOnly, tryLater},

	{StageSynthesis, "overloaded", "I have an answer but cannot speak it right now, because the system is busy.", both, "Please ask again in a moment."},
	{StageSynthesis, "expired", "Speaking my answer took too long, so I stopped.", both, continueQ},
	{StageSynthesis, "closed", "This service is temporarily unavailable, so I cannot speak my answer.", callbackOnly, tryLater},

	{StageCallback, "queued", "Your callback is booked. We will call you back at the number you gave.", nil, ""},
	{StageCallback, "overloaded", "Our callback list is full, so I could not book a callback. Nothing has been scheduled.", handoffOnly, tryLater},
	{StageCallback, "closed", "Callbacks are temporarily unavailable, so I could not book one. Nothing has been scheduled.", handoffOnly, tryLater},
	{StageCallback, ReasonFailed, "Something went wrong on our side and I could not book a callback. Nothing has been scheduled.", handoffOnly, tryLater},

	{StageHandoff, "queued", "I am looking for a person to take your call. Please stay on the line.", nil, ""},
	{StageHandoff, "completed", "A person has taken your call and is joining now.", nil, ""},
	{StageHandoff, "overloaded", "Everyone who could take your call is busy and the waiting line is full, so I could not find you a person.", callbackOnly, tryLater},
	{StageHandoff, "expired", "I am sorry, no one was free to take your call in time, so I have stopped looking.", callbackOnly, tryLater},
	{StageHandoff, "closed", "Transfers to a person are temporarily unavailable.", callbackOnly, tryLater},
	{StageHandoff, ReasonFailed, "Something went wrong on our side and I could not find you a person.", callbackOnly, tryLater},
}

// Offer sentences, by the kinds actually offered.
const (
	offerBoth     = "I can arrange for us to call you back, or put you through to a person. Which would you like?"
	offerCallback = "I can arrange for us to call you back. Would you like that?"
	offerHandoff  = "I can put you through to a person. Would you like that?"
	fallbackText  = "I cannot do that right now."
)

// PromptFor returns the prompt for disposition d at stage, offering only
// the fallbacks that the row allows and that are in available (pass
// Service.Available()). A combination outside the table gets a plain
// sentence that claims nothing and offers nothing.
func PromptFor(stage string, d stages.Disposition, available []Kind) Prompt {
	return lookup(stage, d.String(), available)
}

// PromptFailed returns the prompt for a fallback (StageCallback or
// StageHandoff) that could not be established because something failed: it
// says so, and offers only the other fallback.
func PromptFailed(stage string, available []Kind) Prompt {
	return lookup(stage, ReasonFailed, available)
}

func lookup(stage, reason string, available []Kind) Prompt {
	for _, e := range table {
		if e.stage == stage && e.reason == reason {
			return e.prompt(available)
		}
	}
	return Prompt{Reason: reason, Stage: stage, Text: fallbackText}
}

func (e entry) prompt(available []Kind) Prompt {
	var offer []Kind
	for _, k := range e.may {
		if slices.Contains(available, k) {
			offer = append(offer, k)
		}
	}
	p := Prompt{Reason: e.reason, Stage: e.stage, Text: e.text, Offer: offer}
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

// AllPrompts returns every prompt the table can produce, for every subset
// of available fallbacks, without duplicates: the fixed texts that
// PromptAudio renders ahead of time and docs/PROMPTS.md lists.
func AllPrompts() []Prompt {
	subsets := [][]Kind{nil, callbackOnly, handoffOnly, both}
	var out []Prompt
	seen := map[string]bool{}
	for _, e := range table {
		for _, avail := range subsets {
			p := e.prompt(avail)
			key := p.Stage + "\x00" + p.Reason + "\x00" + p.Text
			if !seen[key] {
				seen[key] = true
				out = append(out, p)
			}
		}
	}
	return out
}
