package fallback

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// HandoffRequest asks for a human agent to take a call.
type HandoffRequest struct {
	Call    string
	Turn    string // the turn whose refusal led here
	Summary string // what the agent sees; at most MaxSummary bytes are kept
	// Tenant and Source (the caller's address), when known, are counted
	// against Config.Bookings.
	Tenant, Source string
}

// MaxSummary bounds the summary an agent is shown.
const MaxSummary = 2000

// Handoff is a caller waiting for a human agent. It resolves exactly once:
// Completed when an agent claimed and acknowledged it (Outcome.Agent says
// who), Expired when no agent claimed it within -handoff-max-wait, Cancelled
// when the caller hung up (Cancel), or Overloaded/Closed when an agent
// abandoned it and it could not go back into the queue.
type Handoff struct {
	// Ref is the handoff's reference, which the caller is told and an agent
	// claims it by ("ticket" on the wire, as for a Callback).
	Ref     string
	Call    string
	Turn    string
	Summary string
	Born    time.Time // when it was requested; its age counts from here

	s       *Service
	done    chan struct{}
	outcome HandoffOutcome
}

// HandoffOutcome is how a Handoff resolved.
type HandoffOutcome struct {
	Disposition stages.Disposition `json:"disposition"`
	Agent       string             `json:"agent,omitempty"`
}

// Done is closed once the handoff has resolved.
func (h *Handoff) Done() <-chan struct{} { return h.done }

// Outcome reports how the handoff resolved; valid once Done is closed.
func (h *Handoff) Outcome() HandoffOutcome { return h.outcome }

// Wait blocks until the handoff resolves or ctx ends. Giving up waiting
// does not withdraw the handoff: call Cancel for that.
func (h *Handoff) Wait(ctx context.Context) (HandoffOutcome, error) {
	select {
	case <-h.done:
		return h.outcome, nil
	case <-ctx.Done():
		return HandoffOutcome{}, ctx.Err()
	}
}

// Position reports the handoff's place among waiting handoffs, 1 first, or
// false when it is not waiting (claimed or resolved): as the queue last
// said (at the request, then at each of the Service's rounds).
func (h *Handoff) Position() (int, bool) {
	h.s.ho.mu.Lock()
	defer h.s.ho.mu.Unlock()
	st := h.s.ho.byRef[h.Ref]
	if st == nil {
		return 0, false
	}
	return st.position, st.position > 0
}

// Cancel withdraws the handoff because the caller left. It resolves as
// Cancelled unless it already resolved; an agent holding it is told (by
// its process, which learns it from the queue).
func (h *Handoff) Cancel() {
	s := h.s
	s.ho.mu.Lock()
	st := s.ho.byRef[h.Ref]
	if st != nil {
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Cancelled})
	}
	s.ho.mu.Unlock()
	if st != nil {
		s.resolveInQueue(context.Background(), h.Ref, HandoffCancelled)
	}
}

// hstate is the caller's side of a handoff held by this process.
type hstate struct {
	h        *Handoff
	timer    clock.Timer // expires it at Born + HandoffMaxWait
	position int         // last known place among waiting handoffs, 0 once claimed
}

// handoffs are the callers and agents connected to this process.
type handoffs struct {
	mu      sync.Mutex
	byRef   map[string]*hstate
	byCall  map[string]*hstate
	agents  map[*agent]struct{}
	closing bool

	returned         atomic.Uint64
	abandonedExpired atomic.Uint64
}

func (ho *handoffs) init() {
	ho.byRef = map[string]*hstate{}
	ho.byCall = map[string]*hstate{}
	ho.agents = map[*agent]struct{}{}
}

func (ho *handoffs) agentCount() int {
	ho.mu.Lock()
	defer ho.mu.Unlock()
	return len(ho.agents)
}

// RequestHandoff puts the call in the handoff queue. It returns Queued and a
// Handoff to wait on, or a refusal (Overloaded, Closed) and no Handoff. A
// call that already has a live handoff gets that one back. Bad requests get
// ErrRequest. The handoff's age counts from now: the caller accepted a new
// offer, with its own budget of -handoff-max-wait.
func (s *Service) RequestHandoff(ctx context.Context, req HandoffRequest) (*Handoff, stages.Disposition, error) {
	if req.Call == "" || req.Turn == "" || len(req.Call) > 256 || len(req.Turn) > 256 {
		return nil, 0, ErrRequest
	}
	if len(req.Summary) > MaxSummary {
		req.Summary = strings.ToValidUTF8(req.Summary[:MaxSummary], "")
	}
	release, d, bound := s.reserveBooking(ctx, req.Source, req.Tenant, "")
	if release == nil {
		s.log.Info("handoff refused", "call", req.Call, "turn", req.Turn, "disposition", d, "bound", bound)
		return nil, d, nil
	}
	h, d, err := s.requestHandoff(ctx, req, newRef("ho_"))
	if err != nil || d != stages.Queued {
		release()
	}
	return h, d, err
}

// requestHandoff enqueues a handoff in the queue, which checks its bound in
// the same step, and keeps the caller's side of it here. Every queue call
// is made without ho.mu held.
func (s *Service) requestHandoff(ctx context.Context, req HandoffRequest, ref string) (*Handoff, stages.Disposition, error) {
	if h, d, ok := s.liveHandoff(req.Call); ok {
		return h, d, nil
	}
	now := s.clock.Now()
	qctx, cancel := context.WithTimeout(ctx, queueTimeout)
	e, d, err := s.hq.Enqueue(qctx, HandoffEntry{Ref: ref, Call: req.Call, Turn: req.Turn, Summary: req.Summary, Born: now, Tenant: req.Tenant})
	cancel()
	s.touched()
	if err != nil {
		// Fail closed: never a handoff nobody can see.
		s.log.Warn("handoff refused: the queue cannot be reached", "call", req.Call, "turn", req.Turn, "err", err)
		return nil, stages.Closed, nil
	}
	if d != stages.Queued {
		s.log.Info("handoff refused", "call", req.Call, "turn", req.Turn, "disposition", d)
		return nil, d, nil
	}
	s.ho.mu.Lock()
	if h, d, ok := s.liveHandoffLocked(req.Call); ok { // closing, or a concurrent request won
		s.ho.mu.Unlock()
		s.resolveInQueue(context.Background(), ref, HandoffCancelled)
		return h, d, nil
	}
	defer s.ho.mu.Unlock()
	h := &Handoff{Ref: ref, Call: req.Call, Turn: req.Turn, Summary: req.Summary, Born: now, s: s, done: make(chan struct{})}
	st := &hstate{h: h, position: e.Position}
	// Expiry is strictly after the deadline, as every gate's (equal is
	// still eligible).
	st.timer = s.clock.AfterFunc(s.cfg.HandoffMaxWait+time.Nanosecond, func() { s.expireHandoff(ref) })
	s.ho.byRef[ref] = st
	s.ho.byCall[req.Call] = st
	s.log.Info("handoff queued", "call", req.Call, "turn", req.Turn, "ticket", ref, "position", e.Position)
	s.broadcastLocked()
	return h, stages.Queued, nil
}

// resolveInQueue ends ref in the queue, best effort: if a fleet's queue
// cannot be reached, its sweep ends it once its caller's liveness runs out.
func (s *Service) resolveInQueue(ctx context.Context, ref string, to HandoffState) {
	ctx, cancel := context.WithTimeout(ctx, queueTimeout)
	defer cancel()
	if _, err := s.hq.Resolve(ctx, ref, to); err != nil && !errors.Is(err, ErrHandoffUnknown) {
		s.log.Warn("handoff resolve in the queue", "ticket", ref, "to", to, "err", err)
	}
}

// expireHandoff ends a handoff that waited HandoffMaxWait. One an agent
// holds now is left to the agent.
func (s *Service) expireHandoff(ref string) {
	ctx, cancel := context.WithTimeout(s.ctx, queueTimeout)
	defer cancel()
	prev, err := s.hq.Resolve(ctx, ref, HandoffExpired)
	if err == nil && prev.State == HandoffClaimed {
		return
	}
	if err != nil && !errors.Is(err, ErrHandoffUnknown) {
		s.log.Warn("handoff expiry in the queue", "ticket", ref, "err", err)
	}
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	if st := s.ho.byRef[ref]; st != nil {
		s.resolveLocked(st, HandoffOutcome{Disposition: stages.Expired})
	}
}

// liveHandoff answers a request that needs no new handoff: the service is
// closing, or the call already has one.
func (s *Service) liveHandoff(call string) (*Handoff, stages.Disposition, bool) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	return s.liveHandoffLocked(call)
}

func (s *Service) liveHandoffLocked(call string) (*Handoff, stages.Disposition, bool) {
	if s.ho.closing {
		return nil, stages.Closed, true
	}
	if st := s.ho.byCall[call]; st != nil {
		return st.h, stages.Queued, true
	}
	return nil, 0, false
}

// resolveLocked resolves st exactly once: it leaves the maps first, so no
// second path can find it. Under ho.mu.
func (s *Service) resolveLocked(st *hstate, out HandoffOutcome) {
	if s.ho.byRef[st.h.Ref] != st {
		return
	}
	delete(s.ho.byRef, st.h.Ref)
	delete(s.ho.byCall, st.h.Call)
	if st.timer != nil {
		st.timer.Stop()
	}
	st.h.outcome = out
	close(st.h.done)
	s.log.Info("handoff resolved", "call", st.h.Call, "ticket", st.h.Ref, "disposition", out.Disposition, "agent", out.Agent)
	s.broadcastLocked()
}

// Errors an agent's claim can get. A HandoffQueue returns them too.
var (
	ErrHandoffUnknown  = errors.New("no such waiting handoff")
	ErrHandoffTaken    = errors.New("handoff already claimed")
	ErrHandoffNotNext  = errors.New("an older handoff is waiting: claim the first in the list")
	ErrHandoffNotYours = errors.New("handoff not claimed by you")
	// ErrHandoffLost: the claim was taken over (its agent's process
	// stopped renewing it) or the handoff resolved meanwhile.
	ErrHandoffLost = errors.New("handoff claim lost")
)
