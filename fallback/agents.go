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
	holds  map[string]int // claims held, ref to attempt; under ho.mu
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
	s.agentLeft(a)
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
		s.serveAgentMessage(ctx, a, m)
	}
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
			l, ok := s.listHandoffs(ctx)
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
