package stages

import (
	"context"
	"log/slog"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// The contract a server programs against, and what it reads through it.
// Each is the admission machinery's own type (package stages/internal/admit),
// named here so that a server needs nothing else.
type (
	// Gate is admission with time owned: in process (NewGate) or fleet-wide
	// (redisstage.Dispatcher), decorated or not (Guard, NewAdaptiveGate).
	Gate = admit.Gate
	// ClaimGate is a Gate whose take is a claim (NewClaimGate): the
	// callback and handoff queues.
	ClaimGate = admit.ClaimGate
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
	// Job is one unit of work offered to a stage.
	Job = admit.Job
	// Limits bound a stage; Limits.Validate checks them.
	Limits = admit.Limits
	// Order is the order in which waiting work takes a freed slot.
	Order = admit.Order
	// Policy selects how an in-process gate admits work (WithPolicy): the
	// product, or a baseline measured against it (Policy.Set parses one).
	Policy = admit.Policy
	// AdaptiveConfig bounds and paces an adaptive slot limit.
	AdaptiveConfig = admit.AdaptiveConfig
	// LimitChange is one move of an adaptive limit (NewAdaptiveGate).
	LimitChange = admit.LimitChange
	// Disposition is the typed outcome of an admission operation or the
	// state of a unit of work.
	Disposition = admit.Disposition
	// Local is the in-process gate NewGate and NewClaimGate build.
	Local = admit.Local
	// Option configures an in-process gate (WithPolicy; stages/trace's
	// recorder).
	Option = admit.Option
)

// The dispositions (see Disposition for which operation returns which).
const (
	Queued     = admit.Queued
	Admitted   = admit.Admitted
	Overloaded = admit.Overloaded
	Expired    = admit.Expired
	Stale      = admit.Stale
	OutOfOrder = admit.OutOfOrder
	Closed     = admit.Closed
	Busy       = admit.Busy
	Empty      = admit.Empty
	Active     = admit.Active
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
)

// NewGate returns the in-process gate of one stage: a controller with
// limits l (the frontdoor policy unless opts choose a baseline with
// WithPolicy), its time owned by a dispatcher on clk (nil: clock.System).
// An error of the dispatcher's take (a clock that went backwards) goes to
// log when log is not nil; its count is in the gate's Snapshot (TakeErrors).
func NewGate(l Limits, clk clock.Clock, log *slog.Logger, opts ...Option) (*Local, error) {
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

// NewClaimGate returns an in-process ClaimGate: work waits until it is
// claimed (Local.Claim), never because a slot freed, and its dispatcher's
// timer on clk (nil: clock.System) still expires the head at its deadline.
// onResolve, when not nil, is told of every outcome (Admitted, Expired,
// Cancelled) outside the gate's lock, in the goroutine that decided it, so
// that an owner keeping state beside the queue learns of expiry without a
// goroutine per job; it may call the gate.
func NewClaimGate(l Limits, clk clock.Clock, onResolve func(id string, d Disposition)) (*Local, error) {
	c, err := admit.New(l)
	if err != nil {
		return nil, err
	}
	dopts := []admit.DispatcherOption{admit.ClaimOnly()}
	if onResolve != nil {
		dopts = append(dopts, admit.OnResolve(onResolve))
	}
	return admit.LocalClaimGate(admit.NewDispatcher(c, clk, dopts...)), nil
}

// WithPolicy makes an in-process gate admit by p.
func WithPolicy(p Policy) Option { return admit.WithPolicy(p) }

// Guard returns g closed by this process alone whenever closed reports
// true, without closing the store behind it (a drain, a quarantined
// backend); see admit.Guard for how its ledger still balances.
func Guard(g Gate, closed func() bool) Gate { return admit.Guard(g, closed) }

// NewAdaptiveGate returns g, which must have a runtime slot limit (the
// gates NewGate and redisstage build do), with that limit moved by the
// adaptive rule cfg on clk (nil: clock.System). The limit g's store holds
// is adopted, clamped to the bounds. onChange, if not nil, is told of every
// move; it must not call back into the gate. The gate takes the latency
// of each stage's useful signal through a method Observe(time.Duration,
// bool), and reports its rule in Snapshot.Adaptive.
func NewAdaptiveGate(ctx context.Context, g Gate, cfg AdaptiveConfig, clk clock.Clock, onChange func(LimitChange)) (Gate, error) {
	a, err := admit.NewAdaptiveGate(ctx, g, cfg, clk, onChange)
	if err != nil {
		return nil, err
	}
	return a, nil
}
