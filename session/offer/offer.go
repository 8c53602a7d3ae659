package offer

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/tenant"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Offers is the Fallback backed by package fallback: the prompt table (with
// prompt audio rendered outside the synthesis stage), an `offer` of only the
// fallbacks with room right now, and the caller's `callback` and `handoff`
// answers. A refused session stays open for OfferWindow so that the caller
// can answer, and while a handoff it asked for waits for an agent.
type Offers struct {
	svc *fallback.Service
	// OfferWindow is how long a refused session waits for an answer to
	// its offer (0: 30s).
	OfferWindow time.Duration

	mu    sync.Mutex
	calls map[string]*offerState
	wg    sync.WaitGroup // handoff watchers
}

type offerState struct {
	turn     string
	said     string // the turn its prompts are spoken for ("" for the session's)
	session  bool   // a refusal of the call: no conversation, the call ends after
	at       time.Time
	misses   int // answers in words not understood (answers.go)
	kinds    []prompt.Kind
	answered chan struct{}     // closed once an answer reached a final outcome
	handoff  *fallback.Handoff // the handoff asked for (under Offers.mu), for the keypad menu to withdraw
	once     sync.Once

	mu      sync.Mutex
	release func() // ends the refused call's hold (Sender.Hold); nil: not held
}

func (s *offerState) done() {
	s.once.Do(func() {
		close(s.answered)
		s.mu.Lock()
		release := s.release
		s.mu.Unlock()
		if release != nil {
			release()
		}
	})
}

// hold notes the release of the call's hold, and releases it at once if
// the offer was answered meanwhile.
func (s *offerState) hold(release func()) {
	s.mu.Lock()
	s.release = release
	s.mu.Unlock()
	select {
	case <-s.answered:
		release()
	default:
	}
}

// CodeSynthetic is the error code of an answer marked synthetic: refused,
// with ErrSynthetic's words.
const CodeSynthetic = "synthetic"

// ErrSynthetic is why a synthetic caller's callback or handoff is refused.
var ErrSynthetic = errors.New("refused for a synthetic caller (load generator): synthetic callbacks and handoffs are never queued with real callers'")

// isSynthetic reports whether an answer carries "synthetic": true, the
// mark of the load generator's callers (frontdoor load, the page's burst).
func isSynthetic(data []byte) bool {
	var m struct {
		Synthetic bool `json:"synthetic"`
	}
	return json.Unmarshal(data, &m) == nil && m.Synthetic
}

// New returns the Fallback for svc.
func New(svc *fallback.Service) *Offers {
	return &Offers{svc: svc, calls: map[string]*offerState{}}
}

// Wait waits for the handoff watchers, which end with their calls.
func (o *Offers) Wait() { o.wg.Wait() }

// Refused implements session.Fallback.
func (o *Offers) Refused(ctx context.Context, r session.Refusal, out session.Sender) {
	avail := o.svc.Available()
	if r.Final || r.Shed {
		avail = nil // the call is ending, or refusals are being shed: no question to wait on
	}
	p := prompt.Of(r.Outcome(), avail)
	keypad := false
	if len(p.Offer) > 0 {
		// A phone caller answers with its keypad: it is offered only
		// what its menu can take now, and nothing (no offer sentence)
		// when no menu can open. Other callers get p unchanged.
		var keys []prompt.Kind
		if keys, keypad = keypadOffer(out, p.Offer); keypad {
			p = prompt.Of(r.Outcome(), keys)
		}
	}
	pm := &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text}
	_ = out.Send(ctx, pm)
	if len(p.Offer) == 0 || r.Disposition == stages.Queued {
		o.speak(ctx, r.Turn, pm, out)
		return
	}
	turn := r.Turn
	if turn == "" {
		turn = r.Stage // the session stage's refusal: one per call
	}
	st := &offerState{turn: turn, said: r.Turn, session: r.Stage == session.StageSession, at: o.svc.Clock().Now(),
		kinds: p.Offer, answered: make(chan struct{})}
	o.mu.Lock()
	o.calls[r.Call] = st
	o.mu.Unlock()
	offer := func() bool {
		if err := out.Send(ctx, &wire.OfferMsg{Type: "offer", Kinds: p.Offer}); errors.Is(err, session.ErrPremiseGone) {
			// The call's state changed since the prompt: its offer is
			// not made, and there is nothing to answer.
			o.mu.Lock()
			if o.calls[r.Call] == st {
				delete(o.calls, r.Call)
			}
			o.mu.Unlock()
			return false
		}
		return true
	}
	if keypad {
		// The keypad menu is spoken: it follows the prompt's audio.
		o.speak(ctx, r.Turn, pm, out)
		if !offer() {
			return
		}
	} else {
		// A caller who answers with messages gets the offer with the
		// prompt's text, not after its audio has been rendered and
		// queued: its buttons show while the prompt is read out, and an
		// answer cuts the rest of the prompt (premise.go).
		if !offer() {
			return
		}
		o.speak(ctx, r.Turn, pm, out)
	}
	if r.Stage != session.StageSession {
		return
	}
	window := o.OfferWindow
	if window <= 0 {
		window = 30 * time.Second
	}
	// The call waits for the answer parked (Sender.Hold): no goroutine
	// of its own and no timer goroutine, until the answer's final
	// outcome, the window's end on the engine's clock, or the caller
	// leaving.
	st.hold(out.Hold(window))
}

// speak sends the audio of pm, a prompt already sent, rendered once and
// cached by package fallback, when the call can take audio. It is spoken
// for pm's premise: cut if the call's state changed since pm, even while
// it was rendered.
func (o *Offers) speak(ctx context.Context, turn string, pm *wire.PromptMsg, out session.Sender) {
	// The rendering's bound is a context deadline for the synthesizer's
	// process or socket: on the wall clock, as I/O deadlines are.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	a, err := o.svc.PromptAudio(rctx, pm.Text)
	if err != nil || len(a.Samples) == 0 {
		return
	}
	_ = out.SendAudio(ctx, turn, pm, backend.Audio(a))
}

// Message implements session.Fallback: `callback` {consent, number},
// `handoff` {} and `decline` {}, and the misses SpokenAnswer returns
// (session.EventUnanswered).
func (o *Offers) Message(ctx context.Context, call string, ev wire.ClientEvent, out session.Sender) bool {
	if ev.Kind == session.EventUnanswered {
		o.missed(ctx, call, ev.Type, out)
		return true
	}
	if ev.Type == typeDecline {
		o.decline(ctx, call, out)
		return true
	}
	if ev.Type != string(prompt.KindCallback) && ev.Type != string(prompt.KindHandoff) {
		return false
	}
	o.mu.Lock()
	st := o.calls[call]
	o.mu.Unlock()
	fail := func(code, msg string) {
		_ = out.Send(ctx, &wire.ErrorMsg{Type: "error", Code: code, Message: msg})
	}
	if st == nil {
		fail(wire.CodeOutOfOrder, "no offer to answer")
		return true
	}
	if isSynthetic(ev.Data) {
		// A load generator's caller (the page's burst, frontdoor load):
		// nothing it asks for reaches the operators' queues.
		fail(CodeSynthetic, ev.Type+": "+ErrSynthetic.Error())
		st.done()
		return true
	}
	switch prompt.Kind(ev.Type) {
	case prompt.KindCallback:
		var m struct {
			Consent bool   `json:"consent"`
			Number  string `json:"number"`
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			fail(wire.CodeBadField, "callback: "+err.Error())
			return true
		}
		res, err := o.svc.RequestCallback(ctx, fallback.CallbackRequest{Call: call, Turn: st.turn, Number: m.Number, Consent: m.Consent,
			Tenant: tenant.CallerFrom(ctx).Tenant, Source: tenant.CallerFrom(ctx).Source})
		switch {
		case errors.Is(err, fallback.ErrConsent), errors.Is(err, fallback.ErrNumber), errors.Is(err, fallback.ErrRequest):
			fail(wire.CodeBadField, err.Error())
			return true
		case err != nil:
			p := prompt.Failed(prompt.StageCallback, nil)
			pm := &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text}
			_ = out.Send(ctx, pm)
			o.speak(ctx, st.turn, pm, out)
		default:
			_ = out.Send(ctx, &wire.FallbackMsg{Type: "callback", Disposition: res.Disposition, Ref: res.Ref})
			if res.Disposition != stages.Queued {
				p := prompt.For(prompt.StageCallback, res.Disposition, nil)
				_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text})
			}
		}
		st.done()
	case prompt.KindHandoff:
		var m struct {
			Spoken bool `json:"spoken"`
		}
		_ = json.Unmarshal(ev.Data, &m)
		h, d, err := o.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: call, Turn: st.turn, Summary: "the caller asked for a person after a refusal",
			Tenant: tenant.CallerFrom(ctx).Tenant, Source: tenant.CallerFrom(ctx).Source})
		if err != nil {
			fail(wire.CodeBadField, err.Error())
			return true
		}
		if h == nil {
			_ = out.Send(ctx, &wire.FallbackMsg{Type: "handoff", Disposition: d})
			p := prompt.For(prompt.StageHandoff, d, nil)
			_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text})
			st.done()
			return true
		}
		o.mu.Lock()
		st.handoff = h
		o.mu.Unlock()
		pos, _ := h.Position()
		_ = out.Send(ctx, &wire.FallbackMsg{Type: "handoff", Disposition: d, Ref: h.Ref, Position: pos})
		if m.Spoken {
			// Asked for in words: the answer is confirmed in words.
			p := prompt.For(prompt.StageHandoff, d, nil)
			pm := &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text}
			_ = out.Send(ctx, pm)
			o.speak(ctx, st.turn, pm, out)
		}
		o.wg.Go(func() {
			defer st.done()
			oc, err := h.Wait(ctx)
			if err != nil {
				h.Cancel() // the caller left
				return
			}
			_ = out.Send(ctx, &wire.FallbackMsg{Type: "handoff", Disposition: oc.Disposition, Ref: h.Ref, Agent: oc.Agent})
			if oc.Disposition != stages.Completed {
				p := prompt.For(prompt.StageHandoff, oc.Disposition, nil)
				_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text})
			}
		})
	}
	return true
}

// SpeaksPrompts implements session.Fallback: Offers renders prompt audio.
func (o *Offers) SpeaksPrompts() bool { return true }

// CallEnded implements session.Fallback.
func (o *Offers) CallEnded(call string) {
	o.mu.Lock()
	delete(o.calls, call)
	o.mu.Unlock()
}

// EndOffer ends a refused call's wait for an answer, as the end of the
// offer window would (for a keypad menu: package session/telephony).
func (o *Offers) EndOffer(call string) {
	o.mu.Lock()
	st := o.calls[call]
	o.mu.Unlock()
	if st != nil {
		st.done()
	}
}

// RenderPrompt returns a prompt's speech, rendered outside the synthesis
// stage and cached by package fallback.
func (o *Offers) RenderPrompt(ctx context.Context, text string) (backend.Audio, error) {
	a, err := o.svc.PromptAudio(ctx, text)
	return backend.Audio(a), err
}

// AnswerWindow is how long a refused call waits for an answer to its
// offer (OfferWindow, 0: 30s).
func (o *Offers) AnswerWindow() time.Duration {
	if o.OfferWindow <= 0 {
		return 30 * time.Second
	}
	return o.OfferWindow
}

// WithdrawHandoff cancels the call's handoff. It reports false when the
// handoff had already resolved otherwise (an agent took it): its outcome
// is then on its way to the call.
func (o *Offers) WithdrawHandoff(call string) bool {
	o.mu.Lock()
	var h *fallback.Handoff
	if st := o.calls[call]; st != nil {
		h = st.handoff
	}
	o.mu.Unlock()
	if h == nil {
		return true
	}
	h.Cancel()
	select {
	case <-h.Done():
		return h.Outcome().Disposition == stages.Cancelled
	default:
		return true
	}
}

// keypadOffer narrows the fallbacks a refusal would offer (kinds) to those
// the caller's keypad menu can take, when out's transport declared a
// keypad (Capabilities.Keypad), which reserves the menu for them; ok is
// false for any other caller, who answers with messages and is offered
// kinds unchanged. Offers calls it before it words the prompt, so that a
// phone caller is never asked a question that nothing listens for.
func keypadOffer(out session.Sender, kinds []prompt.Kind) (keys []prompt.Kind, ok bool) {
	keypad := out.Keypad()
	if keypad == nil {
		return kinds, false
	}
	offered := make([]string, len(kinds))
	for i, k := range kinds {
		offered[i] = string(k)
	}
	for _, k := range keypad(offered) {
		keys = append(keys, prompt.Kind(k))
	}
	return keys, true
}
