// Package refusal is the contract between the call engine and the layer
// that answers its refusals: what the engine reports (Refusal), the call
// that layer speaks to (Sender), what it must do (Fallback), and the
// minimal one, a truthful sentence per outcome (Prompts). Package
// session/offer implements the full Fallback; package session names these
// types as aliases.
package refusal

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Refusal describes work a stage turned away or let expire, a backend
// that failed, or a session waiting in the queue (Disposition Queued, with
// its Position).
type Refusal struct {
	Call        string
	Turn        string             // empty for the session stage
	Stage       string             // session.StageSession, StageModel, StageSynthesis, ...
	Disposition stages.Disposition // 0 for a failure
	Position    int                // for a queued session
	Reason      string             // for a failed backend: its error kind
	// Started: the stage's backend had started on the work before it
	// failed (false for every refusal: stages refuse and expire only
	// queued work, and for a store that could not admit it).
	Started bool
	// Partial: the caller heard part of the reply before the rest was
	// refused or failed; what was said stands.
	Partial bool
	// Final: the call ends once the prompt is out (its session lease was
	// lost); nothing is offered.
	Final bool
	// Shed: the engine is refusing faster than its shed rate a second
	// (session.Config.ShedRate): the refusal is told, but nothing is
	// offered, so that it costs one sentence and no wait for an answer.
	Shed bool
}

// Outcome is what the prompt for r is keyed by (prompt.Of).
func (r Refusal) Outcome() prompt.Outcome {
	return prompt.Outcome{Stage: r.Stage, Reason: reason(r), Started: r.Started, Partial: r.Partial}
}

// Sender is the call a Fallback speaks to: it sends server messages and
// prompt audio to one caller, through the call's outbound queue (messages
// in order among themselves and ahead of queued audio), and says how the
// caller can answer.
type Sender interface {
	// Send queues a message. A PromptMsg, a FallbackMsg or a session
	// outcome changes the call's state: prompt audio spoken for the state
	// before is cut.
	Send(ctx context.Context, msg wire.Message) error
	// SendAudio queues prompt audio (audio_start, binary frames,
	// audio_end) in the call's format, spoken for prompt, a PromptMsg
	// already sent (nil: the last one sent). Prompt audio belongs to no
	// generation, so a barge-in does not cut it; a change of the call's
	// state since prompt was sent does, even one made while the audio was
	// being rendered.
	SendAudio(ctx context.Context, turn string, prompt *wire.PromptMsg, a backend.Audio) error
	// Keypad is the call's transport's declared keypad
	// (session.Capabilities.Keypad); nil when the caller answers with
	// messages.
	Keypad() func(offered []string) []string
	// Hold keeps a call refused at the session stage open once Refused
	// returns, for an answer to its offer: until release is called,
	// window has passed on the engine's clock, or the caller leaves. The
	// wait holds the parked call only. Outside the session stage's Refused
	// it does nothing.
	Hold(window time.Duration) (release func())
}

// Fallback decides what a caller hears after a refusal or expiry, and may
// offer alternatives. Package session/offer provides the full one (offers,
// callbacks, handoffs); Prompts is the minimal default.
type Fallback interface {
	// Refused is called after each refusal, expiry or backend failure, and
	// when a session is queued. It sends at least a PromptMsg through out.
	// For the session stage, the connection closes (1013) once it returns,
	// unless it asked out to Hold the call.
	Refused(ctx context.Context, r Refusal, out Sender)
	// Message is given client messages of types the session does not know
	// (such as "callback" or "handoff"). It reports false if it does not
	// know them either; the caller then gets an unknown_type error.
	Message(ctx context.Context, call string, ev wire.ClientEvent, out Sender) bool
	// SpeaksPrompts reports whether the Fallback sends its prompts as
	// audio itself. When it does not (Prompts), transports without a text
	// channel (Twilio) speak the prompt text with the synthesizer.
	SpeaksPrompts() bool
	// SpokenAnswer is asked about each transcript of a caller whose
	// transport declared no session.Capabilities.Answer: when the utterance
	// answers the call's open offer ("a person, please"), it returns the
	// answer, which the call gives to Message instead of the model.
	SpokenAnswer(call, transcript string) (wire.ClientEvent, bool)
	// Listening reports whether the call's offer waits for an answer in
	// words: the call's utterances then go to the answer recognizer
	// (session.Config.Answers) first, and for a refused call are heard at all.
	Listening(call string) bool
	// CallEnded tells a Fallback that keeps per-call state that the call
	// has ended.
	CallEnded(call string)
}

// Prompts is the default Fallback: a truthful sentence per stage and
// disposition, and no alternatives. It never claims work is in progress once
// it was refused or expired.
type Prompts struct{}

// Refused implements Fallback.
func (Prompts) Refused(ctx context.Context, r Refusal, out Sender) {
	_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: reason(r), Stage: r.Stage, Text: PromptText(r)})
}

// Message implements Fallback.
func (Prompts) Message(context.Context, string, wire.ClientEvent, Sender) bool { return false }

// SpeaksPrompts implements Fallback: Prompts sends text only.
func (Prompts) SpeaksPrompts() bool { return false }

// SpokenAnswer implements Fallback: Prompts offers nothing to answer.
func (Prompts) SpokenAnswer(string, string) (wire.ClientEvent, bool) {
	return wire.ClientEvent{}, false
}

// Listening implements Fallback: Prompts offers nothing to answer.
func (Prompts) Listening(string) bool { return false }

// CallEnded implements Fallback: Prompts keeps no state.
func (Prompts) CallEnded(string) {}

func reason(r Refusal) string {
	if r.Disposition == 0 {
		return wire.TurnFailed
	}
	return r.Disposition.String()
}

// PromptText is the default prompt for r: the sentence of the prompt
// table (docs/PROMPTS.md) for its outcome, without an offer.
func PromptText(r Refusal) string {
	return prompt.Of(r.Outcome(), nil).Text
}
