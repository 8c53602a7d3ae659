package session

import (
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Speech has a premise. Every prompt is spoken for a state of the call:
// queued for a line, refused, offered a fallback, booked. The call keeps a
// premise number that moves whenever its state does; prompt audio is
// queued with the premise it was spoken for, and the writer checks it
// before each write exactly as it checks a reply's generation. So the
// moment a queued caller is admitted or its wait expires, or an offer is
// answered, the rest of the prompt spoken for the old state is cut (its
// audio_end closes it, marked cut) and the next prompt follows. Control
// messages never wait behind audio at all (the outbound queue's control
// lane), so the message that says the state changed is on the wire when
// the change happens.
//
// An `offer` belongs to the prompt it follows: it is queued with that
// prompt's premise, only while no other change came since the prompt
// (Send returns ErrPremiseGone otherwise), and the writer drops it if the
// premise has ended by the time it would be written. So no caller is ever
// offered a callback or a person for a state of the call that is over.

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
