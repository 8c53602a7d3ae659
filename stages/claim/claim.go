// Package claim is the claim queue: a stages.Gate whose take is a claim
// (an operator claiming a callback, an agent claiming a handoff), never a
// freed slot. Expiry, bounds, generations, cancellation, leases and the
// ledger are the Gate's, under the same conformance suite
// (stagestest.RunClaimGate); Claim is all it adds.
//
// New builds the in-process queue; on Redis, a redisstage.Dispatcher with
// Claim set and fallback/redisqueue's queues build the same contract. The results only a claim queue gives (Busy, Empty,
// Active) are declared here as stages.Dispositions, so that they print,
// parse and count in metrics like every other disposition.
package claim

import (
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Gate is a stages.Gate whose take is a claim. Claim(ctx, want) admits the
// head of the queue (Admitted and its id), or only want when want is the
// head; want waiting behind others is Queued, want no longer waiting is its
// state (Expired, Cancelled, ...) or 0 when unknown. It returns Busy when
// every slot is claimed, Empty when nothing waits, stages.Closed when
// closed and empty. Heads past their deadline are expired first, never
// admitted. The claimer holds the admitted work's lease until it releases
// it through the gate.
type Gate = admit.ClaimGate

// Local is the in-process claim queue New builds. Beyond the Gate it
// answers what the owner of an in-process queue asks of it synchronously:
// State(id) (stages.Queued, Active or a terminal disposition), Close and
// Reopen (admission closed by this process, for a drain).
type Local = admit.Local

// The dispositions only a claim queue gives. They are stages.Dispositions:
// their String, text encoding and metrics labels are those of every other
// disposition.
const (
	// Busy: Claim found every slot claimed.
	Busy stages.Disposition = admit.Busy
	// Empty: Claim found nothing waiting.
	Empty stages.Disposition = admit.Empty
	// Active: the work was claimed and its lease is held (Local.State).
	Active stages.Disposition = admit.Active
)

// New returns an in-process claim queue with limits l: work waits until it
// is claimed, never because a slot freed, and its dispatcher's timer on clk
// (nil: clock.System) still expires the head at its deadline. onResolve,
// when not nil, is told of every outcome (stages.Admitted, Expired,
// Cancelled) outside the queue's lock, in the goroutine that decided it, so
// that an owner keeping state beside the queue learns of expiry without a
// goroutine per job; it may call the queue.
func New(l stages.Limits, clk clock.Clock, onResolve func(id string, d stages.Disposition)) (*Local, error) {
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
