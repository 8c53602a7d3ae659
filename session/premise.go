package session

import (
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Speech has a premise (package internal/outbound, premise.go): prompt
// audio is queued with the call's premise and written only while it
// holds. The call decides which of its messages move the premise
// (changesPremise, the frame's Bump); the queue moves it as it queues
// them, and its writer cuts the prompt spoken for the state before.

// changesPremise reports whether msg tells the caller that the call's
// state changed, voiding what was said for the state before: the
// session's outcome (not a new place in the queue), a new prompt, the
// answer to an offer.
func changesPremise(msg wire.Message) bool {
	switch m := msg.(type) {
	case *wire.SessionMsg:
		return m.Disposition != stages.Queued
	case *wire.PromptMsg, *wire.FallbackMsg:
		return true
	}
	return false
}
