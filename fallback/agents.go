package fallback

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Agent WebSocket limits.
const (
	agentReadLimit = 4096            // an agent sends only small JSON messages
	agentOutbox    = 32              // replies buffered per agent before it counts as stuck
	agentWriteWait = 5 * time.Second // a context deadline for coder/websocket's write: on the wall clock
	maxAgentID     = 128
)

// agentMessage is every message on /v1/agents, both ways.
type agentMessage struct {
	Type        string             `json:"type"`
	Ref         string             `json:"ticket,omitempty"`
	Handoff     *handoffView       `json:"handoff,omitempty"`
	Handoffs    []handoffView      `json:"handoffs,omitzero"`
	Disposition stages.Disposition `json:"disposition,omitempty"`
	Code        string             `json:"code,omitempty"`
	Message     string             `json:"message,omitempty"`
}

// handoffView is what an agent sees of a handoff.
type handoffView struct {
	Ref      string `json:"ticket"`
	Call     string `json:"call"`
	Turn     string `json:"turn"`
	Summary  string `json:"summary,omitempty"`
	Position int    `json:"position,omitempty"` // 1 is next; 0 once claimed
	AgeMS    int64  `json:"age_ms"`
	Agent    string `json:"agent,omitempty"` // who holds the claim
}

// agent is one connected human agent.
type agent struct {
	id     string
	out    chan agentMessage // replies; full means the agent stopped reading
	dirty  chan struct{}     // the waiting list changed (coalesced)
	cancel context.CancelFunc
	holds  map[string]int // fleet mode: claims held, ref to attempt; under ho.mu
}

// send queues a reply without blocking; an agent that stopped reading is
// disconnected (its claims return to the queue). Under ho.mu.
func (a *agent) send(m agentMessage) {
	select {
	case a.out <- m:
	default:
		a.cancel()
	}
}

func (a *agent) markDirty() {
	select {
	case a.dirty <- struct{}{}:
	default:
	}
}

// broadcastLocked tells every agent that the list changed. Under ho.mu.
func (s *Service) broadcastLocked() {
	for a := range s.ho.agents {
		a.markDirty()
	}
}

// list is the agents' view of this process's handoffs.
func (s localHandoffs) list(context.Context) ([]handoffView, bool) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	return s.listLocked(), true
}

// listLocked is the waiting and claimed handoffs, oldest first. Under ho.mu.
func (s *Service) listLocked() []handoffView {
	now := s.clock.Now()
	out := make([]handoffView, 0, len(s.ho.byRef))
	waiting, _ := s.hq.g.Waiting(context.Background()) // in process: never fails
	for _, w := range waiting {
		t := w.Owner
		if st := s.ho.byRef[t]; st != nil {
			out = append(out, st.view(now, w.Position))
		}
	}
	for _, st := range s.ho.byRef {
		if st.agent != nil {
			out = append(out, st.view(now, 0))
		}
	}
	return out
}

func (st *hstate) view(now time.Time, pos int) handoffView {
	v := handoffView{Ref: st.h.Ref, Call: st.h.Call, Turn: st.h.Turn, Summary: st.h.Summary, Position: pos, AgeMS: now.Sub(st.h.Born).Milliseconds()}
	if st.agent != nil {
		v.Agent = st.agent.id
	}
	return v
}

func (ho *handoffs) closeAgents() {
	ho.mu.Lock()
	defer ho.mu.Unlock()
	ho.closing = true
	for a := range ho.agents {
		a.cancel()
	}
}

// AgentHandler serves GET /v1/agents?agent=ID, the human agents' WebSocket.
// See docs/PROTOCOL.md, section Fallback. opts are passed to
// websocket.Accept (set OriginPatterns there if agents use a browser page
// on another origin).
func (s *Service) AgentHandler(opts *websocket.AcceptOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("agent")
		if id == "" || len(id) > maxAgentID {
			http.Error(w, "agent query parameter required (1-128 bytes)", http.StatusBadRequest)
			return
		}
		c, err := websocket.Accept(w, r, opts)
		if err != nil {
			return // Accept wrote the response
		}
		s.serveAgent(r.Context(), c, id)
	})
}

func (s *Service) serveAgent(parent context.Context, c *websocket.Conn, id string) {
	c.SetReadLimit(agentReadLimit)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	a := &agent{id: id, out: make(chan agentMessage, agentOutbox), dirty: make(chan struct{}, 1), cancel: cancel, holds: map[string]int{}}
	s.ho.mu.Lock()
	if s.ho.closing {
		s.ho.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "shutting down")
		return
	}
	s.ho.agents[a] = struct{}{}
	a.markDirty()
	s.ho.mu.Unlock()
	s.log.Info("agent connected", "agent", id)

	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		s.agentWriter(ctx, c, a)
	}()
	err := s.agentReader(ctx, c, a)
	cancel()
	<-done

	s.ho.mu.Lock()
	delete(s.ho.agents, a)
	s.ho.mu.Unlock()
	s.hos.agentLeft(a)
	s.log.Info("agent disconnected", "agent", id, "err", err)
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return // the library closed it with 1009
	}
	c.Close(websocket.StatusNormalClosure, "")
}

func (s *Service) agentReader(ctx context.Context, c *websocket.Conn, a *agent) error {
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var m agentMessage
		if typ != websocket.MessageText || json.Unmarshal(b, &m) != nil {
			s.replyError(a, "bad_message", "want a JSON text message with a type")
			continue
		}
		s.hos.agentMessage(ctx, a, m)
	}
}

// agentLeft gives the claims of an agent who left back to the stage.
func (s localHandoffs) agentLeft(a *agent) {
	s.ho.mu.Lock()
	defer s.ho.mu.Unlock()
	for _, st := range s.ho.byRef {
		if st.agent == a {
			s.abandonLocked(st)
		}
	}
}

// agentMessage serves one agent message in process.
func (s localHandoffs) agentMessage(_ context.Context, a *agent, m agentMessage) {
	s.ho.mu.Lock()
	switch m.Type {
	case "claim":
		st, err := s.claimHandoffLocked(a, m.Ref)
		if err != nil {
			a.send(agentMessage{Type: "error", Ref: m.Ref, Code: claimCode(err), Message: err.Error()})
			break
		}
		v := st.view(s.clock.Now(), 0)
		a.send(agentMessage{Type: "claimed", Ref: st.h.Ref, Handoff: &v})
	case "ack":
		if err := s.ackHandoffLocked(a, m.Ref); err != nil {
			a.send(agentMessage{Type: "error", Ref: m.Ref, Code: claimCode(err), Message: err.Error()})
			break
		}
		a.send(agentMessage{Type: "resolved", Ref: m.Ref, Disposition: stages.Completed})
	case "release":
		if st := s.ho.byRef[m.Ref]; st != nil && st.agent == a {
			s.abandonLocked(st)
			a.send(agentMessage{Type: "released", Ref: m.Ref})
		} else {
			a.send(agentMessage{Type: "error", Ref: m.Ref, Code: "not_yours", Message: ErrHandoffNotYours.Error()})
		}
	default:
		a.send(agentMessage{Type: "error", Code: "unknown_type", Message: "want claim, ack or release"})
	}
	s.ho.mu.Unlock()
}

func (s *Service) replyError(a *agent, code, msg string) {
	s.ho.mu.Lock()
	a.send(agentMessage{Type: "error", Code: code, Message: msg})
	s.ho.mu.Unlock()
}

func claimCode(err error) string {
	switch {
	case errors.Is(err, ErrHandoffUnknown):
		return "unknown_ticket"
	case errors.Is(err, ErrHandoffTaken):
		return "taken"
	case errors.Is(err, ErrHandoffNotNext):
		return "not_next"
	case errors.Is(err, ErrHandoffNotYours):
		return "not_yours"
	case errors.Is(err, ErrSlotsBusy):
		return "slots_busy"
	case errors.Is(err, ErrHandoffLost):
		return "lost"
	}
	return "internal"
}

// agentWriter sends replies and, whenever the list changed, the current
// list. It owns every write to c.
func (s *Service) agentWriter(ctx context.Context, c *websocket.Conn, a *agent) {
	for {
		var m agentMessage
		select {
		case <-ctx.Done():
			return
		case m = <-a.out:
		case <-a.dirty:
			l, ok := s.hos.list(ctx)
			if !ok {
				continue // the queue is away; the next change or poll tries again
			}
			m = agentMessage{Type: "waiting", Handoffs: l}
		}
		b, err := json.Marshal(m)
		if err != nil {
			s.log.Error("agent message", "err", err)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, agentWriteWait)
		err = c.Write(wctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			return
		}
	}
}
