package fallback

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// CallbackQueue is a CallbackStore that is also the callback queue, shared
// by every process of a fleet (redisqueue.CallbackStore): it bounds
// pending callbacks and claims, orders claims and expires callbacks
// itself, for all of them at once. A Service given one (WithStore) keeps
// no callback stage of its own: its bounds would be per process.
type CallbackQueue interface {
	CallbackStore
	// Next claims the oldest waiting callback for operator, with a lease
	// of Config.CallbackLease. It returns ErrSlotsBusy when
	// Config.CallbackSlots claims are held in the fleet, ErrNoneWaiting
	// when nothing waits.
	Next(ctx context.Context, operator string, now time.Time) (Callback, error)
	// Sweep returns claims whose lease ran out to the queue, at their
	// place, and expires callbacks that waited Config.CallbackMaxWait.
	Sweep(ctx context.Context, now time.Time) error
	// Snapshot reports the fleet's queue as a stage: limits, waiting and
	// claimed callbacks, the ledger.
	Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error)
}

// HandoffState is where a handoff is in a fleet-wide queue.
type HandoffState string

// Handoff states. Waiting and Claimed are live.
const (
	HandoffWaiting   HandoffState = "pending"
	HandoffClaimed   HandoffState = "claimed"
	HandoffCompleted HandoffState = "completed"
	HandoffExpired   HandoffState = "expired"
	HandoffCancelled HandoffState = "cancelled"
	HandoffClosed    HandoffState = "closed"
)

// Live reports whether the handoff still waits or is held by an agent.
func (s HandoffState) Live() bool { return s == HandoffWaiting || s == HandoffClaimed }

// Disposition is the outcome a terminal state stands for.
func (s HandoffState) Disposition() stages.Disposition {
	switch s {
	case HandoffWaiting:
		return stages.Queued
	case HandoffClaimed:
		return stages.Admitted
	case HandoffCompleted:
		return stages.Completed
	case HandoffExpired:
		return stages.Expired
	case HandoffCancelled:
		return stages.Cancelled
	}
	return stages.Closed
}

// HandoffEntry is a handoff as a fleet-wide queue holds it.
type HandoffEntry struct {
	Ref     string
	Call    string
	Turn    string
	Summary string
	Born    time.Time
	State   HandoffState
	// Position is the place among waiting handoffs, 1 next; 0 otherwise.
	Position int
	// Agent holds the claim (Claimed) or completed it (Completed).
	Agent string
	// Attempt counts claims; it fences a claim that was taken over.
	Attempt int
	// Tenant, when known, is whose share of the queue the handoff uses
	// while it waits (enforced where the queue is given a share).
	Tenant string
}

// HandoffQueue is the handoff queue shared by every process of a fleet
// (redisqueue.HandoffQueue): an agent connected to any process sees and
// claims the handoffs of calls held by every process. It bounds waiting
// handoffs (Config.HandoffQueue) and claims (Config.HandoffSlots) itself.
//
// Liveness crosses processes through Keep: the process holding a caller
// renews the caller's handoffs, and the process holding an agent renews the
// agent's claims. Sweep, which any process may run, cancels the handoffs of
// callers whose process stopped renewing and returns to the queue the
// claims of agents whose process did, each after the queue's TTL.
type HandoffQueue interface {
	// Enqueue adds e as waiting and returns it with its position: Queued,
	// Overloaded when the fleet's waiting bound is reached, or an error.
	Enqueue(ctx context.Context, e HandoffEntry) (HandoffEntry, stages.Disposition, error)
	// Claim gives agent the first waiting handoff, or ref when it is the
	// first. Errors: ErrSlotsBusy, ErrHandoffNotNext, ErrHandoffTaken,
	// ErrHandoffUnknown.
	Claim(ctx context.Context, agent, ref string, now time.Time) (HandoffEntry, error)
	// Ack completes the claim attempt of ref at now (ErrHandoffLost if it
	// was taken over).
	Ack(ctx context.Context, ref string, attempt int, now time.Time) (HandoffEntry, error)
	// Release puts the claim attempt of ref back at its place, or
	// expires the handoff if it waited longer than Config.HandoffMaxWait:
	// Queued or Expired.
	Release(ctx context.Context, ref string, attempt int, now time.Time) (stages.Disposition, error)
	// Resolve ends a live handoff from the caller's side, as Cancelled or
	// Closed, or as Expired only while it waits. It returns the entry as
	// it was before.
	Resolve(ctx context.Context, ref string, to HandoffState) (HandoffEntry, error)
	// List returns the waiting handoffs in order, then the claimed ones.
	List(ctx context.Context) ([]HandoffEntry, error)
	// Get returns the entries of refs that still exist, with their
	// positions.
	Get(ctx context.Context, refs []string) ([]HandoffEntry, error)
	// Keep renews the liveness of callers' handoffs and of claims (ref
	// to attempt) held here.
	Keep(ctx context.Context, callers []string, claims map[string]int) error
	// Sweep runs the fleet's timeouts (see the type's comment) and expires
	// waiting handoffs older than Config.HandoffMaxWait.
	Sweep(ctx context.Context, now time.Time) error
	// Watch signals (coalesced) when any process changed the queue, until
	// ctx ends; the channel is then closed.
	Watch(ctx context.Context) <-chan struct{}
	// Snapshot reports the fleet's handoffs as a stage.
	Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error)
	// TTL is how long liveness lasts without Keep.
	TTL() time.Duration
}
