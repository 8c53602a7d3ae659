package offer

import (
	"context"
	"slices"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Answers in words to an offer made to a caller who answers with messages
// (the native WebSocket, WebRTC; a phone's menu takes its own: package
// session/telephony). The engine hears them (session's answer.go) and asks
// SpokenAnswer what an utterance was:
//
//   - "a person": the `handoff` answer, as if the caller had sent it;
//   - "no thanks": `decline`: nothing is arranged, the caller hears so, and
//     a refused call's wait ends;
//   - "call me back": a callback needs a number, and nothing in the native
//     protocol gives one before the `callback` message does; so the caller
//     hears that no callback can be booked from words, and the offer stays
//     open for a `callback` message or another answer (counted as a miss
//     in a refused call, so that it cannot go on forever);
//   - anything else, in a refused call (which has no conversation for it
//     to go on to): asked again once, with the offer's sentence; a second
//     miss ends the wait with the prompt that says nothing was arranged.
//     In a conversation it is no answer, and goes on to the model.

// typeDecline is the answer that turns an offer down: a client message
// (`{"type":"decline"}`) or "no thanks" in words.
const typeDecline = "decline"

// Internal answers (session.EventUnanswered): an utterance that answered
// nothing, and "call me back" without a number.
const (
	missUnheard  = "unanswered"
	missNoNumber = "no-number"
)

// maxMisses is how many answers in words a refused call's offer takes
// that it cannot act on: the first is asked again, the second ends the
// wait.
const maxMisses = 2

// Listening implements session.Fallback: the call's offer waits for an
// answer. An offer made in a conversation listens for as long as a
// refused call waits for its answer (AnswerWindow), so that the turns
// after it are not held up by answer recognition for the rest of the call.
func (o *Offers) Listening(call string) bool {
	o.mu.Lock()
	st := o.calls[call]
	o.mu.Unlock()
	if st == nil || o.isDone(st) {
		return false
	}
	o.mu.Lock()
	holding := st.handoff != nil
	o.mu.Unlock()
	if holding {
		return false
	}
	return st.session || o.svc.Clock().Now().Before(st.at.Add(o.AnswerWindow()))
}

func (o *Offers) isDone(st *offerState) bool {
	select {
	case <-st.answered:
		return true
	default:
		return false
	}
}

// SpokenAnswer implements session.Fallback: what a transcript answers to
// the call's open offer (see above).
func (o *Offers) SpokenAnswer(call, transcript string) (wire.ClientEvent, bool) {
	o.mu.Lock()
	st := o.calls[call]
	asked := st != nil && st.handoff != nil
	o.mu.Unlock()
	if st == nil || asked || o.isDone(st) {
		return wire.ClientEvent{}, false
	}
	kind := fallback.SpokenAnswer(transcript)
	switch {
	case fallback.Declines(transcript):
		return wire.ClientEvent{Kind: wire.EventOther, Type: typeDecline, Data: []byte(`{"type":"decline","spoken":true}`)}, true
	case kind == prompt.KindHandoff && slices.Contains(st.kinds, prompt.KindHandoff):
		return wire.ClientEvent{Kind: wire.EventOther, Type: string(prompt.KindHandoff), Data: []byte(`{"type":"handoff","spoken":true}`)}, true
	case kind == prompt.KindCallback && slices.Contains(st.kinds, prompt.KindCallback):
		return wire.ClientEvent{Kind: session.EventUnanswered, Type: missNoNumber}, true
	case st.session:
		return wire.ClientEvent{Kind: session.EventUnanswered, Type: missUnheard}, true
	}
	return wire.ClientEvent{}, false
}

// say sends the prompt of StageOffer for reason, offering what of kinds
// its row allows, and speaks it.
func (o *Offers) say(ctx context.Context, st *offerState, reason string, kinds []prompt.Kind, out session.Sender) {
	p := prompt.Of(prompt.Outcome{Stage: prompt.StageOffer, Reason: reason}, kinds)
	pm := &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text}
	_ = out.Send(ctx, pm)
	o.speak(ctx, st.said, pm, out)
}

// missed handles an answer in words that the offer cannot act on.
func (o *Offers) missed(ctx context.Context, call, why string, out session.Sender) {
	o.mu.Lock()
	st := o.calls[call]
	if st != nil && st.session {
		st.misses++
	}
	var misses int
	if st != nil {
		misses = st.misses
	}
	o.mu.Unlock()
	if st == nil || o.isDone(st) {
		return
	}
	switch {
	case misses >= maxMisses:
		o.say(ctx, st, prompt.ReasonUnanswered, nil, out)
		st.done()
	case why == missNoNumber:
		o.say(ctx, st, prompt.ReasonNoNumber, st.kinds, out)
	default:
		o.say(ctx, st, prompt.ReasonUnheard, st.kinds, out)
	}
}

// decline ends the call's offer: nothing is arranged, and the caller
// hears so. A refused call's wait ends with it.
func (o *Offers) decline(ctx context.Context, call string, out session.Sender) {
	o.mu.Lock()
	st := o.calls[call]
	pending := st != nil && st.handoff == nil
	o.mu.Unlock()
	if !pending || o.isDone(st) {
		_ = out.Send(ctx, &wire.ErrorMsg{Type: "error", Code: wire.CodeOutOfOrder, Message: "no offer to decline"})
		return
	}
	o.say(ctx, st, prompt.ReasonDeclined, nil, out)
	st.done()
}
