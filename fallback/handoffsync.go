package fallback

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// The queue (order, bounds, claims) is the HandoffQueue's; this process
// keeps two sides of it. The caller's side: a Handoff for each caller on
// this process, resolved when the queue says its entry ended (an agent
// acknowledged it, anywhere; it expired, ...). The agent's side: the claims
// held by agents connected here, with their attempts. Every queue call is
// made without ho.mu held. An in-process queue answers at once and signals
// every change (Watch); a fleet's answers for every process.

// reconcile reads the queue's entries for this process's callers and
// agents' claims, and acts on what other processes decided.
func (s *Service) reconcileHandoffs(ctx context.Context) {
	s.ho.mu.Lock()
	refs := s.callersLocked()
	asked := make(map[string]bool, len(refs))
	for _, t := range refs {
		asked[t] = true
	}
	held := map[*agent]map[string]int{} // the claims as they were when asked
	for a := range s.ho.agents {
		held[a] = maps.Clone(a.holds)
		for t := range a.holds {
			refs = append(refs, t)
		}
	}
	s.ho.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	entries, err := s.hq.Get(ctx, refs)
	if err != nil {
		return // unreachable: the callers' timers still run; try again
	}
	got := make(map[string]HandoffEntry, len(entries))
	for _, e := range entries {
		got[e.Ref] = e
	}
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	// Claims and callers that appeared since the tickets were gathered
	// may be newer than the answer: they wait for the next round. (A
	// caller's ticket asked about is no proof for a claim of it made
	// meanwhile: the answer may show it still waiting.)
	for a := range s.ho.agents {
		for t, attempt := range a.holds {
			e, ok := got[t]
			if was, asked := held[a][t]; !asked || was != attempt || ok && e.State == HandoffClaimed && e.Attempt == attempt {
				continue
			}
			delete(a.holds, t)
			if ok && !e.State.Live() {
				a.send(agentMessage{Type: "resolved", Ref: t, Disposition: e.State.Disposition()})
			} else {
				a.send(agentMessage{Type: "error", Ref: t, Code: "lost", Message: ErrHandoffLost.Error()})
			}
		}
	}
	for t, st := range s.ho.byRef {
		e, ok := got[t]
		switch {
		case !asked[t]:
		case !ok: // the queue lost it (Redis lost its data): nobody can take it
			s.resolveLocked(st, HandoffOutcome{Disposition: stages.Closed})
		case !e.State.Live():
			s.resolveLocked(st, HandoffOutcome{Disposition: e.State.Disposition(), Agent: e.Agent})
		default:
			st.position = e.Position
		}
	}
}

// callersLocked lists the refs of this process's callers. Under ho.mu.
func (s *Service) callersLocked() []string {
	out := make([]string, 0, len(s.ho.byRef))
	for t := range s.ho.byRef {
		out = append(out, t)
	}
	return out
}

// keepHandoffs renews this process's callers and claims in the queue.
func (s *Service) keepHandoffs(ctx context.Context) {
	s.ho.mu.Lock()
	callers := s.callersLocked()
	claims := map[string]int{}
	for a := range s.ho.agents {
		for t, n := range a.holds {
			claims[t] = n
		}
	}
	s.ho.mu.Unlock()
	if len(callers) == 0 && len(claims) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	if err := s.hq.Keep(ctx, callers, claims); err != nil && ctx.Err() == nil {
		s.log.Warn("handoff renewal", "err", err)
	}
}

// broadcast tells this process's agents that the fleet's list changed.
func (s *Service) broadcast() {
	s.ho.mu.Lock()
	s.broadcastLocked()
	s.ho.mu.Unlock()
}

// closeHandoffs ends this process's callers' handoffs as Closed in the
// queue (their local side resolves in Close). Agents' claims are released as
// their connections end.
func (s *Service) closeHandoffs() {
	s.ho.mu.Lock()
	refs := s.callersLocked()
	s.ho.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), queueTimeout) // one deadline for all: Redis may be away
	defer cancel()
	for _, t := range refs {
		s.resolveInQueue(ctx, t, HandoffClosed)
	}
}

// serveAgentMessage serves one agent message: claim, ack or release.
func (s *Service) serveAgentMessage(ctx context.Context, a *agent, m agentMessage) {
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	reply := func(r agentMessage) {
		s.ho.mu.Lock()
		a.send(r)
		s.ho.mu.Unlock()
	}
	s.ho.mu.Lock()
	attempt, held := a.holds[m.Ref]
	s.ho.mu.Unlock()
	switch m.Type {
	case "claim":
		e, err := s.hq.Claim(ctx, a.id, m.Ref, s.clock.Now())
		if err != nil {
			reply(agentMessage{Type: "error", Ref: m.Ref, Code: claimCode(err), Message: err.Error()})
			return
		}
		v := entryView(e, s.clock.Now())
		s.ho.mu.Lock()
		a.holds[e.Ref] = e.Attempt
		a.send(agentMessage{Type: "claimed", Ref: e.Ref, Handoff: &v})
		s.ho.mu.Unlock()
		s.log.Info("handoff claimed", "call", e.Call, "ticket", e.Ref, "agent", a.id, "attempt", e.Attempt)
	case "ack", "release":
		if !held {
			reply(agentMessage{Type: "error", Ref: m.Ref, Code: "not_yours", Message: ErrHandoffNotYours.Error()})
			return
		}
		var err error
		if m.Type == "ack" {
			_, err = s.hq.Ack(ctx, m.Ref, attempt, s.clock.Now())
		} else {
			var d stages.Disposition
			d, err = s.hq.Release(ctx, m.Ref, attempt, s.clock.Now())
			s.abandoned(m.Ref, d, err)
		}
		s.ho.mu.Lock()
		defer s.ho.mu.Unlock()
		switch {
		case errors.Is(err, ErrHandoffLost):
			delete(a.holds, m.Ref)
			a.send(agentMessage{Type: "error", Ref: m.Ref, Code: "lost", Message: err.Error()})
		case err != nil: // unreachable: the claim is still ours, try again
			a.send(agentMessage{Type: "error", Ref: m.Ref, Code: "unavailable", Message: err.Error()})
		case m.Type == "ack":
			delete(a.holds, m.Ref)
			a.send(agentMessage{Type: "resolved", Ref: m.Ref, Disposition: stages.Completed})
			if st := s.ho.byRef[m.Ref]; st != nil { // the caller is here: no need to wait for the poll
				s.resolveLocked(st, HandoffOutcome{Disposition: stages.Completed, Agent: a.id})
			}
		default:
			delete(a.holds, m.Ref)
			a.send(agentMessage{Type: "released", Ref: m.Ref})
		}
	default:
		reply(agentMessage{Type: "error", Code: "unknown_type", Message: "want claim, ack or release"})
	}
}

// agentLeft returns the claims of an agent who left.
func (s *Service) agentLeft(a *agent) {
	s.ho.mu.Lock()
	holds := a.holds
	a.holds = map[string]int{}
	s.ho.mu.Unlock()
	for t, attempt := range holds {
		ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
		d, err := s.hq.Release(ctx, t, attempt, s.clock.Now())
		cancel()
		s.abandoned(t, d, err)
	}
}

// abandoned counts and logs a claim an agent let go (release or
// disconnect): the queue put it back at its place (Queued) or resolved it
// (Expired when too old). The caller's side learns which from the queue.
func (s *Service) abandoned(ref string, d stages.Disposition, err error) {
	switch {
	case err != nil:
		s.log.Warn("handoff abandoned by agent; the queue takes it back after its TTL", "ticket", ref, "err", err)
	case d == stages.Queued:
		s.ho.returned.Add(1)
		s.log.Warn("handoff abandoned by agent; back in the queue", "ticket", ref)
	default:
		if d == stages.Expired {
			s.ho.abandonedExpired.Add(1)
		}
		s.log.Warn("handoff abandoned by agent; resolved", "ticket", ref, "disposition", d)
	}
}

// listHandoffs is the agents' view of the queue; false while it is away.
func (s *Service) listHandoffs(ctx context.Context) ([]handoffView, bool) {
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	entries, err := s.hq.List(ctx)
	if err != nil {
		return nil, false
	}
	now := s.clock.Now()
	out := make([]handoffView, 0, len(entries))
	for _, e := range entries {
		out = append(out, entryView(e, now))
	}
	return out, true
}

func entryView(e HandoffEntry, now time.Time) handoffView {
	v := handoffView{Ref: e.Ref, Call: e.Call, Turn: e.Turn, Summary: e.Summary, Position: e.Position, AgeMS: now.Sub(e.Born).Milliseconds()}
	if e.State == HandoffClaimed {
		v.Agent = e.Agent
		v.Position = 0
	}
	return v
}
