package session

import (
	"context"
	"fmt"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Refusal describes work a stage turned away or let expire, or a session
// waiting in the queue (Disposition Queued, with its Position).
type Refusal struct {
	Call        string
	Turn        string // empty for the session stage
	Stage       string // StageSession, StageModel, StageSynthesis, ...
	Disposition stages.Disposition
	Position    int    // for a queued session
	Reason      string // for a failed backend: its error kind
}

// Sender sends server messages to one caller, through the call's outbound
// queue (in order with everything else the call sends).
type Sender interface {
	Send(ctx context.Context, msg any) error
}

// Fallback decides what a caller hears after a refusal or expiry, and may
// offer alternatives. Package fallback provides the full one (offers,
// callbacks, handoffs); Prompts is the minimal default.
type Fallback interface {
	// Refused is called after each refusal, expiry or backend failure, and
	// when a session is queued. It sends at least a PromptMsg through out.
	// For the session stage, the connection closes (1013) once it returns.
	Refused(ctx context.Context, r Refusal, out Sender)
	// Message is given client messages of types the session does not know
	// (such as "callback" or "handoff"). It reports false if it does not
	// know them either; the caller then gets an unknown_type error.
	Message(ctx context.Context, call string, ev ClientEvent, out Sender) bool
}

// Prompts is the default Fallback: a truthful sentence per stage and
// disposition, and no alternatives. It never claims work is in progress once
// it was refused or expired.
type Prompts struct{}

// Refused implements Fallback.
func (Prompts) Refused(ctx context.Context, r Refusal, out Sender) {
	_ = out.Send(ctx, &PromptMsg{Type: "prompt", Reason: reason(r), Stage: r.Stage, Text: PromptText(r)})
}

// Message implements Fallback.
func (Prompts) Message(context.Context, string, ClientEvent, Sender) bool { return false }

func reason(r Refusal) string {
	if r.Disposition == 0 {
		return TurnFailed
	}
	return r.Disposition.String()
}

// PromptText is the default prompt for r.
func PromptText(r Refusal) string {
	if r.Stage == StageSession {
		switch r.Disposition {
		case stages.Queued:
			return fmt.Sprintf("All our lines are busy. You are number %d in line; please stay on the line and we will connect you as soon as a line is free.", r.Position)
		case stages.Overloaded:
			return "All our lines are busy and the waiting line is full, so we cannot take your call right now. Please try again in a few minutes."
		case stages.Expired:
			return "We could not connect you within the time we allow for waiting, so we are ending this attempt. Please try again in a few minutes."
		case stages.Closed:
			return "This service is temporarily unavailable. Please try again later."
		}
	}
	what := "answer"
	if r.Stage == StageSynthesis {
		what = "spoken reply"
	}
	switch r.Disposition {
	case stages.Overloaded:
		return fmt.Sprintf("Too many people are asking at once, so I could not start your %s. It was not started; please ask again in a moment.", what)
	case stages.Expired:
		return fmt.Sprintf("Your %s waited too long to start, so I stopped it before it began. Do you still want to continue?", what)
	case stages.Closed:
		return "This service is temporarily unavailable and is not taking new requests. Please call again later."
	case stages.Stale:
		return "That request belonged to an earlier part of our conversation, so I did not start it."
	case stages.OutOfOrder:
		return "That request arrived out of order, so I did not start it. Please say it again."
	}
	return "Something went wrong on our side and I could not finish that reply. Please ask again."
}
