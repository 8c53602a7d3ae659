package fallback

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback/internal/claimq"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// localHandoffs is the handoff queue of one process, the default of New: a
// claim gate of its own (internal/claimq over claim.New) and the
// entries it holds, answering the HandoffQueue contract at once. Every job
// of the gate is one claim attempt of a handoff (jobID), so that a handoff
// an agent let go is offered again, with its original Born, as a new job.
//
// Resolved entries stay readable for doneKeep, as in the fleet's queue, so
// that the Service learns how a handoff ended (Get) after the fact.
type localHandoffs struct {
	q     *claimq.Queue
	clock clock.Clock

	mu       sync.Mutex
	entries  map[string]*localEntry
	watchers map[chan struct{}]struct{}
}

type localEntry struct {
	HandoffEntry
	job  string    // the gate's job of the current attempt
	done time.Time // when it resolved; zero while live
}

// doneKeep is how long a resolved handoff stays readable (Get).
const doneKeep = 10 * time.Minute

var _ HandoffQueue = (*localHandoffs)(nil)

func jobID(ref string, attempt int) string { return ref + "/" + strconv.Itoa(attempt) }

// NewLocalHandoffQueue returns this process's handoff queue with limits l on
// clk (nil: clock.System), as New makes it when it is given no
// WithHandoffQueue: for a claim gate over the Service's contract in tests
// (redisqueue.NewHandoffGateOn).
func NewLocalHandoffQueue(l stages.Limits, clk clock.Clock) (HandoffQueue, error) {
	if clk == nil {
		clk = clock.System
	}
	return newLocalHandoffs(l, clk)
}

func newLocalHandoffs(l stages.Limits, clk clock.Clock) (*localHandoffs, error) {
	q, err := claimq.New(l, clk)
	if err != nil {
		return nil, err
	}
	h := &localHandoffs{q: q, clock: clk, entries: map[string]*localEntry{}, watchers: map[chan struct{}]struct{}{}}
	q.OnExpire = func(ids []string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.expiredLocked(ids)
	}
	q.ExpiredLocked = h.expiredLocked // every operation runs under h.mu
	return h, nil
}

func (h *localHandoffs) expiredLocked(ids []string) {
	for _, id := range ids {
		ref, _, _ := strings.Cut(id, "/")
		if e := h.entries[ref]; e != nil && e.job == id && e.State.Live() {
			h.endLocked(e, HandoffExpired)
		}
	}
}

// endLocked resolves e as st and tells the watchers. Under h.mu.
func (h *localHandoffs) endLocked(e *localEntry, st HandoffState) {
	e.State, e.Position, e.done = st, 0, h.clock.Now()
	h.changedLocked()
}

func (h *localHandoffs) changedLocked() {
	for w := range h.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// withPosition is e as the contract returns it: its place while it waits.
func (h *localHandoffs) withPosition(e *localEntry) HandoffEntry {
	out := e.HandoffEntry
	out.Position = 0
	if e.State == HandoffWaiting {
		out.Position, _ = h.q.Position(e.job)
	}
	return out
}

// Enqueue implements HandoffQueue.
func (h *localHandoffs) Enqueue(_ context.Context, e HandoffEntry) (HandoffEntry, stages.Disposition, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	le := &localEntry{HandoffEntry: e, job: jobID(e.Ref, 0)}
	le.State, le.Agent, le.Attempt = HandoffWaiting, "", 0
	d, err := h.q.Offer(stages.Job{ID: le.job, Owner: e.Ref, Born: e.Born, Tenant: e.Tenant})
	if err != nil || d != stages.Queued {
		return HandoffEntry{}, d, err
	}
	h.entries[e.Ref] = le
	h.changedLocked()
	return h.withPosition(le), stages.Queued, nil
}

// Claim implements HandoffQueue.
func (h *localHandoffs) Claim(_ context.Context, agent, ref string, _ time.Time) (HandoffEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var want string
	if ref != "" {
		e := h.entries[ref]
		switch {
		case e == nil || !e.State.Live():
			return HandoffEntry{}, ErrHandoffUnknown
		case e.State == HandoffClaimed:
			return HandoffEntry{}, ErrHandoffTaken
		}
		want = e.job
	}
	d, id, err := h.q.Claim(want)
	if err != nil {
		return HandoffEntry{}, err
	}
	switch d {
	case stages.Admitted:
	case stages.Queued:
		return HandoffEntry{}, ErrHandoffNotNext
	case claim.Busy:
		return HandoffEntry{}, ErrSlotsBusy
	default: // Empty, Expired, Closed: nothing to claim
		return HandoffEntry{}, ErrHandoffUnknown
	}
	t, _, _ := strings.Cut(id, "/")
	e := h.entries[t]
	if e == nil || e.job != id { // cannot happen: every job has an entry
		h.q.Cancel(id, t)
		return HandoffEntry{}, ErrHandoffUnknown
	}
	e.State, e.Agent, e.Position = HandoffClaimed, agent, 0
	e.Attempt++
	h.changedLocked()
	return e.HandoffEntry, nil
}

// claimedLocked is the entry of ref claimed at attempt, or ErrHandoffLost.
func (h *localHandoffs) claimedLocked(ref string, attempt int) (*localEntry, error) {
	e := h.entries[ref]
	if e == nil || e.State != HandoffClaimed || e.Attempt != attempt {
		return nil, ErrHandoffLost
	}
	return e, nil
}

// Ack implements HandoffQueue: the claim's lease is released, Completed.
func (h *localHandoffs) Ack(_ context.Context, ref string, attempt int, _ time.Time) (HandoffEntry, error) {
	return h.settle(ref, attempt, false)
}

// Fail implements HandoffQueue: Ack counted Failed.
func (h *localHandoffs) Fail(_ context.Context, ref string, attempt int, _ time.Time) (HandoffEntry, error) {
	return h.settle(ref, attempt, true)
}

func (h *localHandoffs) settle(ref string, attempt int, failed bool) (HandoffEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, err := h.claimedLocked(ref, attempt)
	if err != nil {
		return HandoffEntry{}, err
	}
	release, to := h.q.Release, HandoffCompleted
	if failed {
		release, to = h.q.ReleaseFailed, HandoffFailed
	}
	if _, err := release(e.job, ref); err != nil {
		return HandoffEntry{}, err
	}
	h.endLocked(e, to)
	return e.HandoffEntry, nil
}

// Refuse implements HandoffQueue.
func (h *localHandoffs) Refuse(_ context.Context, d stages.Disposition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.q.Refuse(d)
}

// Release implements HandoffQueue: the claim's lease is released as
// cancelled and the handoff offered again with its original Born. The gate
// decides, in that one offer, whether it goes back to the queue or resolves
// (Expired when too old, Overloaded or Closed otherwise): never both.
func (h *localHandoffs) Release(_ context.Context, ref string, attempt int, _ time.Time) (stages.Disposition, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, err := h.claimedLocked(ref, attempt)
	if err != nil {
		return 0, err
	}
	h.q.Cancel(e.job, ref)
	e.job = jobID(ref, e.Attempt)
	d, err := h.q.Offer(stages.Job{ID: e.job, Owner: ref, Born: e.Born, Tenant: e.Tenant})
	switch {
	case err == nil && d == stages.Queued:
		e.State, e.Agent = HandoffWaiting, ""
		h.changedLocked()
	case err == nil && d == stages.Expired:
		h.endLocked(e, HandoffExpired)
	case err == nil && d == stages.Overloaded:
		h.endLocked(e, HandoffOverloaded)
	default:
		d = stages.Closed
		h.endLocked(e, HandoffClosed)
	}
	return d, nil
}

// Resolve implements HandoffQueue.
func (h *localHandoffs) Resolve(_ context.Context, ref string, to HandoffState) (HandoffEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if to == HandoffExpired {
		h.q.ExpireDue() // the gate decides expiry, and counts it so
	}
	e := h.entries[ref]
	if e == nil {
		return HandoffEntry{}, ErrHandoffUnknown
	}
	before := h.withPosition(e)
	if !e.State.Live() || to == HandoffExpired {
		return before, nil // expired by the gate above, claimed, or not due
	}
	h.q.Cancel(e.job, ref)
	h.endLocked(e, to)
	return before, nil
}

// List implements HandoffQueue.
func (h *localHandoffs) List(ctx context.Context) ([]HandoffEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	waiting, _ := h.q.Gate().Waiting(ctx) // in process: never fails
	out := make([]HandoffEntry, 0, len(waiting))
	for _, w := range waiting {
		if e := h.entries[w.Owner]; e != nil && e.State == HandoffWaiting {
			v := e.HandoffEntry
			v.Position = w.Position
			out = append(out, v)
		}
	}
	for _, e := range h.entries {
		if e.State == HandoffClaimed {
			out = append(out, e.HandoffEntry)
		}
	}
	return out, nil
}

// Get implements HandoffQueue.
func (h *localHandoffs) Get(_ context.Context, refs []string) ([]HandoffEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HandoffEntry, 0, len(refs))
	for _, t := range refs {
		if e := h.entries[t]; e != nil {
			out = append(out, h.withPosition(e))
		}
	}
	return out, nil
}

// Keep implements HandoffQueue: in one process, callers and claims live as
// long as it does.
func (h *localHandoffs) Keep(context.Context, []string, map[string]int) error { return nil }

// Sweep implements HandoffQueue: the gate's timer expires waiting
// handoffs; the sweep forgets resolved ones after doneKeep.
func (h *localHandoffs) Sweep(_ context.Context, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for t, e := range h.entries {
		if !e.done.IsZero() && now.Sub(e.done) > doneKeep {
			delete(h.entries, t)
		}
	}
	return nil
}

// Watch implements HandoffQueue: every change signals at once.
func (h *localHandoffs) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.watchers[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		delete(h.watchers, ch)
		h.mu.Unlock()
		close(ch)
	})
	return ch
}

// Snapshot implements HandoffQueue.
func (h *localHandoffs) Snapshot(context.Context, time.Time) (stages.Snapshot, error) {
	return h.q.Snapshot(), nil
}

// Room implements HandoffQueue.
func (h *localHandoffs) Room() bool { return h.q.Room() }

// View implements HandoffQueue: the gate itself, with its waiting list.
func (h *localHandoffs) View() stages.View { return h.q.Gate() }

// TTL implements HandoffQueue: there is nobody else to renew for; Keep is
// asked this often all the same.
func (h *localHandoffs) TTL() time.Duration { return time.Minute }

// Stop implements HandoffQueue: admission closes and the gate's timer ends.
func (h *localHandoffs) Stop() {
	h.q.Gate().Close()
	h.q.Stop()
}
