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
	"github.com/frontdoorhq/frontdoor/stages/claim"
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
// false when it is not waiting (claimed or resolved).
func (h *Handoff) Position() (int, bool) {
	h.s.ho.mu.Lock()
	st := h.s.ho.byRef[h.Ref]
	h.s.ho.mu.Unlock()
	if st == nil {
		return 0, false
	}
	return h.s.hos.position(st)
}

func (s localHandoffs) position(st *hstate) (int, bool) { return s.hq.Position(st.job) }

// Cancel withdraws the handoff because the caller left. It resolves as
// Cancelled unless it already resolved; an agent holding it is told.
func (h *Handoff) Cancel() { h.s.hos.cancel(h) }

func (s localHandoffs) cancel(h *Handoff) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	st := s.ho.byRef[h.Ref]
	if st == nil {
		return
	}
	s.hq.Cancel(st.job, h.Ref)
	if st.agent != nil {
		st.agent.send(agentMessage{Type: "resolved", Ref: h.Ref, Disposition: stages.Cancelled})
	}
	s.resolveLocked(st, HandoffOutcome{Disposition: stages.Cancelled})
}

type hstate struct {
	h       *Handoff
	job     string // current job id in the handoff stage
	attempt int
	agent   *agent // the agent holding the claim, nil while waiting

	// Fleet mode: the caller's side of a handoff in the shared queue.
	timer    clock.Timer // expires it at Born + HandoffMaxWait
	position int         // last known place among waiting handoffs, 0 once claimed
}

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
	h, d, err := s.hos.request(ctx, req, newRef("ho_"))
	if err != nil || d != stages.Queued {
		release()
	}
	return h, d, err
}

// localHandoffs is the handoff queue of one process: the handoff stage (a
// claim gate, internal/claimq) and the callers and agents connected here. Its
// methods are the Service's, serialized by ho.mu.
type localHandoffs struct{ *Service }

func (s localHandoffs) request(ctx context.Context, req HandoffRequest, ref string) (*Handoff, stages.Disposition, error) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	if h, d, ok := s.liveHandoffLocked(req.Call); ok {
		return h, d, nil
	}
	now := s.clock.Now()
	h := &Handoff{Ref: ref, Call: req.Call, Turn: req.Turn, Summary: req.Summary, Born: now, s: s.Service, done: make(chan struct{})}
	st := &hstate{h: h, job: jobID(h.Ref, 0)}
	d, err := s.hq.Offer(stages.Job{ID: st.job, Owner: h.Ref, Born: now})
	if err != nil {
		return nil, 0, err
	}
	if d != stages.Queued {
		s.log.Info("handoff refused", "call", req.Call, "turn", req.Turn, "disposition", d)
		return nil, d, nil
	}
	s.ho.byRef[h.Ref] = st
	s.ho.byCall[h.Call] = st
	s.log.Info("handoff queued", "call", req.Call, "turn", req.Turn, "ticket", h.Ref)
	s.broadcastLocked()
	return h, stages.Queued, nil
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

func (s *Service) handoffsExpired(ids []string) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	s.handoffsExpiredLocked(ids)
}

func (s *Service) handoffsExpiredLocked(ids []string) {
	for _, id := range ids {
		ref, _, _ := strings.Cut(id, "/")
		if st := s.ho.byRef[ref]; st != nil && st.job == id {
			s.resolveLocked(st, HandoffOutcome{Disposition: stages.Expired})
		}
	}
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

// claimHandoff gives ref (or the first waiting handoff when ref is
// empty) to a. Under ho.mu.
func (s *Service) claimHandoffLocked(a *agent, ref string) (*hstate, error) {
	var want string
	if ref != "" {
		st := s.ho.byRef[ref]
		if st == nil {
			return nil, ErrHandoffUnknown
		}
		if st.agent != nil {
			return nil, ErrHandoffTaken
		}
		want = st.job
	}
	d, id, err := s.hq.Claim(want)
	if err != nil {
		return nil, err
	}
	switch d {
	case stages.Admitted:
	case stages.Queued:
		return nil, ErrHandoffNotNext
	case claim.Busy:
		return nil, ErrSlotsBusy
	case stages.Expired:
		return nil, ErrHandoffUnknown // resolved above
	default:
		return nil, ErrHandoffUnknown
	}
	t, _, _ := strings.Cut(id, "/")
	st := s.ho.byRef[t]
	if st == nil || st.job != id { // cannot happen: every job has a state
		s.hq.Cancel(id, t)
		return nil, ErrHandoffUnknown
	}
	st.agent = a
	s.log.Info("handoff claimed", "call", st.h.Call, "ticket", t, "agent", a.id)
	s.broadcastLocked()
	return st, nil
}

// ackHandoffLocked completes the transfer of a handoff a holds.
func (s *Service) ackHandoffLocked(a *agent, ref string) error {
	st := s.ho.byRef[ref]
	if st == nil {
		return ErrHandoffUnknown
	}
	if st.agent != a {
		return ErrHandoffNotYours
	}
	if _, err := s.hq.Release(st.job, ref); err != nil {
		return err
	}
	s.resolveLocked(st, HandoffOutcome{Disposition: stages.Completed, Agent: a.id})
	return nil
}

// abandonLocked handles an agent letting go of a claimed handoff (release
// or disconnect): the claim's lease is released as cancelled, and the
// handoff is offered again with its original Born. The stage decides, in
// that one offer, whether it goes back to the queue or resolves (Expired
// when too old, Overloaded or Closed otherwise): never both.
func (s *Service) abandonLocked(st *hstate) {
	ref := st.h.Ref
	s.hq.Cancel(st.job, ref)
	st.agent = nil
	st.attempt++
	st.job = jobID(ref, st.attempt)
	d, err := s.hq.Offer(stages.Job{ID: st.job, Owner: ref, Born: st.h.Born})
	switch {
	case err == nil && d == stages.Queued:
		s.ho.returned.Add(1)
		s.log.Warn("handoff abandoned by agent; back in the queue", "call", st.h.Call, "ticket", ref)
		s.broadcastLocked()
	default:
		if err != nil || d == 0 {
			d = stages.Closed
		}
		if d == stages.Expired {
			s.ho.abandonedExpired.Add(1)
		}
		s.log.Warn("handoff abandoned by agent; resolved", "call", st.h.Call, "ticket", ref, "disposition", d, "err", err)
		s.resolveLocked(st, HandoffOutcome{Disposition: d})
	}
}
