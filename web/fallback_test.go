package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// offerFallback connects the session server to package fallback the way
// the page expects it (docs/PROTOCOL.md: `prompt`, then `offer`; the caller
// answers `callback` or `handoff`, the server answers with a disposition
// and a ticket). It stands in for the wiring session or cmd will own, so
// the page's offer and agent console can be tested against the real
// fallback queues and /v1/agents.
type offerFallback struct {
	svc *fallback.Service

	mu    sync.Mutex
	turns map[string]string // call -> the turn of its last refusal
	wg    sync.WaitGroup    // handoff watchers
}

func newOfferFallback(svc *fallback.Service) *offerFallback {
	return &offerFallback{svc: svc, turns: map[string]string{}}
}

func (f *offerFallback) Refused(ctx context.Context, r session.Refusal, out session.Sender) {
	var p prompt.Prompt
	if r.Disposition == 0 {
		p = prompt.Failed(r.Stage, f.svc.Available())
	} else {
		p = prompt.For(r.Stage, r.Disposition, f.svc.Available())
	}
	_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: p.Reason, Stage: p.Stage, Text: p.Text})
	if len(p.Offer) == 0 || r.Disposition == stages.Queued {
		return
	}
	f.mu.Lock()
	f.turns[r.Call] = r.Turn
	f.mu.Unlock()
	_ = out.Send(ctx, &wire.OfferMsg{Type: "offer", Kinds: p.Offer})
}

func (f *offerFallback) Message(ctx context.Context, call string, ev wire.ClientEvent, out session.Sender) bool {
	f.mu.Lock()
	turn := f.turns[call]
	f.mu.Unlock()
	reply := func(v wire.Message) { _ = out.Send(ctx, v) }
	switch ev.Type {
	case "callback":
		var m struct {
			Consent bool   `json:"consent"`
			Number  string `json:"number"`
		}
		_ = json.Unmarshal(ev.Data, &m)
		res, err := f.svc.RequestCallback(ctx, fallback.CallbackRequest{Call: call, Turn: turn, Number: m.Number, Consent: m.Consent})
		switch {
		case errors.Is(err, fallback.ErrConsent), errors.Is(err, fallback.ErrNumber), errors.Is(err, fallback.ErrRequest):
			reply(&wire.ErrorMsg{Type: "error", Code: wire.CodeBadField, Message: err.Error()})
		case err != nil:
			reply(&wire.FallbackMsg{Type: "callback", Disposition: stages.Failed})
		default:
			reply(&wire.FallbackMsg{Type: "callback", Disposition: res.Disposition, Ref: res.Ref})
		}
	case "handoff":
		h, d, err := f.svc.RequestHandoff(ctx, fallback.HandoffRequest{Call: call, Turn: turn, Summary: "caller asked for a person"})
		if err != nil {
			reply(&wire.ErrorMsg{Type: "error", Code: wire.CodeBadField, Message: err.Error()})
			return true
		}
		if h == nil {
			reply(&wire.FallbackMsg{Type: "handoff", Disposition: d})
			return true
		}
		reply(&wire.FallbackMsg{Type: "handoff", Disposition: d, Ref: h.Ref})
		f.wg.Go(func() {
			o, err := h.Wait(ctx)
			if err != nil {
				h.Cancel() // the caller left
				return
			}
			reply(&wire.FallbackMsg{Type: "handoff", Disposition: o.Disposition, Ref: h.Ref, Agent: o.Agent})
		})
	default:
		return false
	}
	return true
}

func (f *offerFallback) wait() { f.wg.Wait() }

// SpeaksPrompts implements session.Fallback: this one sends text only.
func (f *offerFallback) SpeaksPrompts() bool { return false }

// SpokenAnswer implements session.Fallback: this one takes no answer in
// words.
func (f *offerFallback) SpokenAnswer(string, string) (wire.ClientEvent, bool) {
	return wire.ClientEvent{}, false
}

// Listening implements session.Fallback: this one takes no answer in words.
func (f *offerFallback) Listening(string) bool { return false }

// CallEnded implements session.Fallback.
func (f *offerFallback) CallEnded(call string) {
	f.mu.Lock()
	delete(f.turns, call)
	f.mu.Unlock()
}
