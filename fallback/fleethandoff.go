package fallback

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Handoffs in fleet mode. The queue (order, bounds, claims) is the fleet's
// HandoffQueue; this process keeps two sides of it. The caller's side: a
// Handoff for each caller on this process, resolved when the queue says its
// entry ended (an agent anywhere acknowledged it, it expired, ...). The
// agent's side: the claims held by agents connected here, with their
// attempts. Every queue call is made without ho.mu held.

// fleetHandoffs is the fleet's handoff queue (Service.hfq) seen from this
// process: its callers' Handoffs and its agents' claims.
type fleetHandoffs struct{ *Service }

// request enqueues a handoff in the fleet's queue.
func (s fleetHandoffs) request(ctx context.Context, req HandoffRequest, ref string) (*Handoff, stages.Disposition, error) {
	if h, d, ok := s.liveHandoff(req.Call); ok {
		return h, d, nil
	}
	now := s.clock.Now()
	qctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	e, d, err := s.hfq.Enqueue(qctx, HandoffEntry{Ref: ref, Call: req.Call, Turn: req.Turn, Summary: req.Summary, Born: now, Tenant: req.Tenant})
	cancel()
	if err != nil {
		// Fail closed: never a handoff nobody can see.
		s.log.Warn("handoff refused: the fleet's queue cannot be reached", "call", req.Call, "turn", req.Turn, "err", err)
		return nil, stages.Closed, nil
	}
	if d != stages.Queued {
		s.log.Info("handoff refused by the fleet's queue", "call", req.Call, "turn", req.Turn, "disposition", d)
		return nil, d, nil
	}
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	if h, d, ok := s.liveHandoffLocked(req.Call); ok { // closing, or a concurrent request won
		s.ho.mu.Unlock()
		s.resolveRemote(context.Background(), ref, HandoffCancelled)
		s.ho.mu.Lock()
		return h, d, nil
	}
	h := &Handoff{Ref: ref, Call: req.Call, Turn: req.Turn, Summary: req.Summary, Born: now, s: s.Service, done: make(chan struct{})}
	st := &hstate{h: h, position: e.Position}
	st.timer = s.clock.AfterFunc(s.cfg.HandoffMaxWait, func() { s.expireFleetHandoff(ref) })
	s.ho.byRef[ref] = st
	s.ho.byCall[req.Call] = st
	s.log.Info("handoff queued", "call", req.Call, "turn", req.Turn, "ticket", ref, "position", e.Position)
	return h, stages.Queued, nil
}

// resolveRemote ends ref in the fleet's queue, best effort: if the queue
// cannot be reached, the sweep ends it once its caller's liveness runs out.
func (s *Service) resolveRemote(ctx context.Context, ref string, to HandoffState) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	if _, err := s.hfq.Resolve(ctx, ref, to); err != nil && !errors.Is(err, ErrHandoffUnknown) {
		s.log.Warn("handoff resolve in the fleet's queue", "ticket", ref, "to", to, "err", err)
	}
}

// position is the caller's place as last read from the fleet's queue.
func (s fleetHandoffs) position(st *hstate) (int, bool) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	return st.position, st.position > 0
}

// cancel withdraws a caller's handoff: the caller left.
func (s fleetHandoffs) cancel(h *Handoff) {
	s.ho.mu.Lock()
	st := s.ho.byRef[h.Ref]
	if st != nil {
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Cancelled})
	}
	s.ho.mu.Unlock()
	if st != nil {
		s.resolveRemote(context.Background(), h.Ref, HandoffCancelled)
	}
}

// expireFleetHandoff ends a handoff that waited HandoffMaxWait. One an agent
// holds now is left to the agent, as in process.
func (s *Service) expireFleetHandoff(ref string) {
	ctx, cancel := context.WithTimeout(s.ctx, fleetTimeout)
	defer cancel()
	prev, err := s.hfq.Resolve(ctx, ref, HandoffExpired)
	if err == nil && prev.State == HandoffClaimed {
		return
	}
	if err != nil && !errors.Is(err, ErrHandoffUnknown) {
		s.log.Warn("handoff expiry in the fleet's queue", "ticket", ref, "err", err)
	}
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	if st := s.ho.byRef[ref]; st != nil {
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Expired})
	}
}

// reconcile reads the queue's entries for this process's callers and
// agents' claims, and acts on what other processes decided.
func (s fleetHandoffs) reconcile(ctx context.Context) {
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
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	entries, err := s.hfq.Get(ctx, refs)
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
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	if err := s.hfq.Keep(ctx, callers, claims); err != nil && ctx.Err() == nil {
		s.log.Warn("handoff renewal", "err", err)
	}
}

// broadcast tells this process's agents that the fleet's list changed.
func (s *Service) broadcast() {
	s.ho.mu.Lock()
	s.broadcastLocked()
	s.ho.mu.Unlock()
}

// close ends this process's callers' handoffs as Closed in the queue
// (their local side resolves in Close). Agents' claims are released as
// their connections end.
func (s fleetHandoffs) close() {
	s.ho.mu.Lock()
	refs := s.callersLocked()
	s.ho.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout) // one deadline for all: Redis may be away
	defer cancel()
	for _, t := range refs {
		s.resolveRemote(ctx, t, HandoffClosed)
	}
}

// agentMessage serves one agent message in fleet mode.
func (s fleetHandoffs) agentMessage(ctx context.Context, a *agent, m agentMessage) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
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
		e, err := s.hfq.Claim(ctx, a.id, m.Ref, s.clock.Now())
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
			_, err = s.hfq.Ack(ctx, m.Ref, attempt, s.clock.Now())
		} else {
			_, err = s.hfq.Release(ctx, m.Ref, attempt, s.clock.Now())
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
func (s fleetHandoffs) agentLeft(a *agent) {
	s.ho.mu.Lock()
	holds := a.holds
	a.holds = map[string]int{}
	s.ho.mu.Unlock()
	for t, attempt := range holds {
		ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
		if d, err := s.hfq.Release(ctx, t, attempt, s.clock.Now()); err != nil {
			s.log.Warn("handoff abandoned by agent; the fleet takes it back after the TTL", "ticket", t, "err", err)
		} else {
			s.log.Warn("handoff abandoned by agent", "ticket", t, "disposition", d)
		}
		cancel()
	}
}

// list is the agents' view of the fleet's queue.
func (s fleetHandoffs) list(ctx context.Context) ([]handoffView, bool) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	entries, err := s.hfq.List(ctx)
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
