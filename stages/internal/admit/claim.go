package admit

import (
	"context"
	"time"
)

// ClaimGate is a Gate whose take is a claim: work queued on it is admitted
// only when someone claims it (an operator claiming a callback, an agent
// claiming a handoff), never because a slot freed. Expiry, bounds,
// generations, cancellation, leases and the ledger are the Gate's; a
// Release frees a claim's slot without admitting anything. The callback and
// handoff queues of package fallback are ClaimGates, run in process
// (LocalClaimGate) or fleet-wide (redisstage.Dispatcher with
// DispatcherOptions.Claim), under the conformance suite stagestest.RunClaimGate.
type ClaimGate interface {
	Gate
	// Claim admits the head of the queue: Admitted and its id, whose
	// Pending resolves Admitted and whose lease the claimer now holds
	// (Release or ReleaseFailed it through this gate). With want set it
	// admits only want, and only when want is the head (the longest
	// waiting goes first); want waiting behind others is Queued, and want
	// no longer waiting is its state (Expired, Cancelled, ...) or 0 when
	// unknown. Busy when every slot is claimed, Empty when nothing waits,
	// Closed when closed and empty. Heads past their deadline are expired
	// first, never admitted.
	Claim(ctx context.Context, want string) (Disposition, string, error)
}

// ClaimOnly makes the Dispatcher a ClaimGate's: it admits work only on
// Claim, while its timer still expires the head at its deadline.
func ClaimOnly() DispatcherOption { return func(d *Dispatcher) { d.claim = true } }

// Claim admits the head of the queue, or want when it is the head (see
// ClaimGate.Claim). It is meant for a Dispatcher made with ClaimOnly; on
// another it admits as Take would.
func (d *Dispatcher) Claim(want string) (Disposition, string, error) {
	d.mu.Lock()
	defer d.unlock()
	now := d.clk.Now()
	d.pump(now) // expire heads past their deadline first
	if want != "" {
		if pos, ok := d.c.Position(want); !ok {
			st, _ := d.c.State(want)
			return st, "", nil
		} else if pos != 1 {
			return Queued, "", nil
		}
	}
	disp, id, err := d.c.Take(now)
	if err == nil && disp == Admitted {
		if t := d.waiting[id]; t != nil {
			d.resolve(t, Admitted, now)
		}
	}
	d.arm(now)
	return disp, id, err
}

// expireOnly is pump for a claim dispatcher: it takes only heads past their
// deadline, which expire, and never admits. Under d.mu.
func (d *Dispatcher) expireOnly(now time.Time) {
	for {
		d.c.mu.Lock()
		expires, ok := d.c.head()
		d.c.mu.Unlock()
		if !ok || !expires.Before(now) {
			return
		}
		disp, id, err := d.c.Take(now)
		if err != nil {
			d.takeErrors.Add(1)
			if d.takeErr != nil {
				d.takeErr(err)
			}
			return
		}
		if disp != Expired {
			return // cannot happen: only d takes, under d.mu
		}
		if t := d.waiting[id]; t != nil {
			d.resolve(t, Expired, now)
		}
	}
}

// LocalClaimGate returns d, made with ClaimOnly, as a ClaimGate.
func LocalClaimGate(d *Dispatcher) *Local { return &Local{d} }

// Claim admits the head of the queue, or want when it is the head
// (ClaimGate.Claim).
func (g *Local) Claim(_ context.Context, want string) (Disposition, string, error) {
	return g.d.Claim(want)
}
