package fallback

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// The Service asks each of its two queues through one contract, the same in
// both modes: CallbackQueue and HandoffQueue. A queue is a claim gate
// (claim.Gate) seen with what the Service keeps beside it: it bounds
// waiting work and claims, orders claims, expires work at its deadline and
// counts every offer in its ledger. In process the queue is a
// claim.Gate of this process (internal/claimq; localCallbacks over
// the durable store, localHandoffs), the default of New; in a fleet it is
// the fleet's queue on Redis (redisqueue.CallbackStore, HandoffQueue).
// stagestest.RunClaimGate runs on both contracts in both modes, through
// gates built on the contract alone (redisqueue.NewCallbackGateOn over
// NewLocalCallbackQueue on the SQLite store and over the Redis queue;
// redisqueue.NewHandoffGateOn over NewLocalHandoffQueue and over the Redis
// queue). A booked callback is kept until a claim or its deadline: the
// caller was told it will be called back, so no later turn of the call
// withdraws it (the suite runs with stagestest.Kept). The Service never
// asks which queue it has: local and fleet differ in the constructor.
//
// Work another process decided (an agent elsewhere acknowledged a handoff,
// a sweep expired it) reaches the Service through Watch and Get, which an
// in-process queue answers at once.

// CallbackQueue is a CallbackStore that is also the callback queue: it
// bounds pending callbacks (Accept refuses with ErrQueueFull; a tenant's
// share by Callback.Tenant, where the queue is given one) and claims,
// orders claims, leases and expires callbacks itself. The default is this
// process's claim gate over the durable store (New with a plain store);
// redisqueue.CallbackStore is the fleet's, for every process at once.
//
// Finish, Return and Expire through the queue free the claim's slot or the
// callback's place as well as changing the record. Claim is the store's:
// it takes a callback wherever it waits. The fleet's queue counts it in
// its slots; this process's queue records it in the store only, and its
// gate learns of it as of a claim made by another process on the same
// file (frontdoor callbacks): it holds no slot here. The queue's own
// claims are Next's.
type CallbackQueue interface {
	CallbackStore
	// Room reports, without waiting, whether an offer now would find a
	// waiting place: a remote queue answers from its last Snapshot.
	Room() bool
	// View shows the queue as a stage without waiting (a remote queue by
	// its last Snapshot, shown closed while it cannot be reached).
	View() stages.View
	// Stop ends the queue's timers; the store stays open.
	Stop()
	// Next claims the oldest waiting callback for operator, or ref only
	// when it is the oldest (so that an operator gets the callback they
	// saw at the head, not whichever is the head when the claim lands),
	// with a lease of Config.CallbackLease. It returns ErrSlotsBusy when
	// Config.CallbackSlots claims are held in the fleet, ErrNoneWaiting
	// when nothing waits, ErrNotNext when ref waits behind others, and
	// for a ref that does not wait ErrNotFound or ErrNotLive.
	Next(ctx context.Context, operator, ref string, now time.Time) (Callback, error)
	// Sweep returns claims whose lease ran out to the queue and expires
	// callbacks that waited Config.CallbackMaxWait. A fleet's queue
	// returns a claim to its place; this process's gate offers it again,
	// behind the callbacks waiting now (as HandoffQueue.Release).
	Sweep(ctx context.Context, now time.Time) error
	// Refuse counts in the ledger an offer that a claim gate over the
	// queue refused before it (Stale, Expired), as HandoffQueue.Refuse.
	Refuse(ctx context.Context, d stages.Disposition) error
	// Snapshot reads the queue as a stage: limits, waiting and claimed
	// callbacks, the ledger. A remote queue keeps it for Room and View.
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
	// HandoffFailed: acknowledged as failed (Fail).
	HandoffFailed HandoffState = "failed"
	// HandoffOverloaded: an abandoned claim found no waiting place.
	HandoffOverloaded HandoffState = "overloaded"
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
	case HandoffOverloaded:
		return stages.Overloaded
	case HandoffFailed:
		return stages.Failed
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

// HandoffQueue is the handoff queue: this process's claim gate (the
// default of New), or the one shared by every process of a fleet
// (redisqueue.HandoffQueue, WithHandoffQueue), where an agent connected to
// any process sees and claims the handoffs of calls held by every process.
// It bounds waiting handoffs (Config.HandoffQueue) and claims
// (Config.HandoffSlots) itself.
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
	// Fail is Ack counted Failed in the ledger: a claim gate's
	// ReleaseFailed (the Service itself never fails a handoff).
	Fail(ctx context.Context, ref string, attempt int, now time.Time) (HandoffEntry, error)
	// Refuse counts in the ledger an offer that a claim gate over the
	// queue refused before it (Stale, Expired), as the queue counts its
	// own refusals.
	Refuse(ctx context.Context, d stages.Disposition) error
	// Release puts the claim attempt of ref back in the queue, or
	// expires the handoff if it waited longer than Config.HandoffMaxWait:
	// Queued or Expired (in process, Overloaded or Closed when it found no
	// waiting place). A fleet's queue puts it back at its place; this
	// process's gate offers it again, behind the handoffs waiting now.
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
	// Snapshot reads the handoffs as a stage; a remote queue keeps it for
	// Room and View.
	Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error)
	// Room and View are CallbackQueue's.
	Room() bool
	View() stages.View
	// TTL is how long liveness lasts without Keep.
	TTL() time.Duration
	// Stop ends the queue's timers.
	Stop()
}
