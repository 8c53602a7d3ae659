package stages

import (
	"log/slog"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// The contract a server programs against, and what it reads through it.
// Each is the admission machinery's own type (package stages/internal/admit),
// named here so that a server needs nothing else.
type (
	// Gate is admission with time owned: in process (NewGate) or fleet-wide
	// (redisstage.Dispatcher), decorated or not (Guard, adaptive.New). A
	// claim.Gate is a Gate whose take is a claim (the callback and handoff
	// queues).
	Gate = admit.Gate
	// Pending is queued work waiting for its outcome.
	Pending = admit.Pending
	// View is the read-only side of a stage: what operators are shown.
	View = admit.View
	// ViewFunc is a View known by its snapshots alone.
	ViewFunc = admit.ViewFunc
	// Snapshot is a stage's limits, inventory and ledger at one instant.
	Snapshot = admit.Snapshot
	// Ledger counts every piece of work a stage has seen, by outcome.
	Ledger = admit.Ledger
	// Waiter is one piece of queued work as Gate.Waiting lists it; a
	// gate built outside stages (fallback/redisqueue) names it to implement Gate.
	Waiter = admit.Waiter
	// Job is one unit of work offered to a stage.
	Job = admit.Job
	// Limits bound a stage; Limits.Validate checks them.
	Limits = admit.Limits
	// Order is the order in which waiting work takes a freed slot.
	Order = admit.Order
	// Policy selects how an in-process gate admits work (WithPolicy): the
	// product, or a baseline measured against it (Policy.Set parses one).
	Policy = admit.Policy
	// Disposition is the typed outcome of an admission operation or the
	// state of a unit of work.
	Disposition = admit.Disposition
	// Option configures an in-process gate (WithPolicy; stages/trace's
	// recorder).
	Option = admit.Option
)

// The dispositions a server meets: Submit returns Queued, Overloaded,
// Expired, Stale, OutOfOrder or Closed; a Pending resolves Admitted,
// Expired or Cancelled; Release returns Completed or Cancelled, and
// ReleaseFailed Failed or Cancelled. A claim queue adds its own (claim.Busy,
// claim.Empty, claim.Active), of this same type.
const (
	Queued     = admit.Queued
	Admitted   = admit.Admitted
	Overloaded = admit.Overloaded
	Expired    = admit.Expired
	Stale      = admit.Stale
	OutOfOrder = admit.OutOfOrder
	Closed     = admit.Closed
	Cancelled  = admit.Cancelled
	Completed  = admit.Completed
	Failed     = admit.Failed
)

// Fair is the Order that gives a freed slot to the tenants with waiting
// work in turn; the zero Order is first in first out.
const Fair = admit.Fair

var (
	// ErrGeneration: Rotate was given a generation not above the owner's
	// current one; the owner is already past it.
	ErrGeneration = admit.ErrGeneration
	// ErrFenced: a lease was lost and may be someone else's; its stale
	// holder may neither release nor renew it.
	ErrFenced = admit.ErrFenced
	// ErrUnavailable: the store could not decide (Redis down or slow);
	// the server refuses the work closed, never stale.
	ErrUnavailable = admit.ErrUnavailable
)

// NewGate returns the in-process gate of one stage: a controller with
// limits l (the frontdoor policy unless opts choose a baseline with
// WithPolicy), its time owned by a dispatcher on clk (nil: clock.System).
// An error of the dispatcher's take (a clock that went backwards) goes to
// log when log is not nil; its count is in the gate's Snapshot (TakeErrors).
func NewGate(l Limits, clk clock.Clock, log *slog.Logger, opts ...Option) (Gate, error) {
	c, err := admit.New(l, opts...)
	if err != nil {
		return nil, err
	}
	var dopts []admit.DispatcherOption
	if log != nil {
		dopts = append(dopts, admit.OnTakeError(func(err error) {
			log.Error("stage could not take waiting work", "err", err)
		}))
	}
	return admit.LocalGate(admit.NewDispatcher(c, clk, dopts...)), nil
}

// WithPolicy makes an in-process gate admit by p.
func WithPolicy(p Policy) Option { return admit.WithPolicy(p) }

// Guard returns g closed by this process alone whenever closed reports
// true, without closing the store behind it: a drain closes admission on
// one replica, never fleet-wide, and a quarantined backend's stage refuses
// new work while the others go on. While closed, Submit refuses Closed
// without reaching g, and Snapshot counts those refusals in its ledger, so
// the ledger still balances. It forwards an adaptive gate's Observe.
func Guard(g Gate, closed func() bool) Gate { return admit.Guard(g, closed) }
