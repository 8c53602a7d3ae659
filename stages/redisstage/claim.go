package redisstage

import (
	"context"
	"fmt"
	"strconv"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

var _ claim.Gate = (*Dispatcher)(nil)

// Claim admits the head of the fleet-wide queue, or want only when it is the
// head (claim.Gate.Claim), on a Dispatcher made with Claim set. The
// lease is this replica's: it renews it until Release or ReleaseFailed here,
// and it is lost (and the slot the fleet's again) if this replica stops
// renewing it for a TTL. The submitter's ticket, on whichever replica,
// resolves Admitted. When Redis cannot be reached it returns Closed and an
// error wrapping admit.ErrUnavailable.
func (d *Dispatcher) Claim(ctx context.Context, want string) (stages.Disposition, string, error) {
	if !d.claim {
		return 0, "", fmt.Errorf("%w: Claim on a dispatcher without DispatcherOptions.Claim", admit.ErrJob)
	}
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if stopped {
		return stages.Closed, "", fmt.Errorf("%w: dispatcher stopped", admit.ErrUnavailable)
	}
	now := d.clock.Now()
	r, err := d.s.run(ctx, claimScript, d.pump, now, want)
	if err != nil {
		return stages.Closed, "", err
	}
	d.apply(r, now)
	if r.code == -3 {
		id, _ := r.extra.(string)
		return 0, "", fmt.Errorf("%w: now %v, head %q", admit.ErrClock, now, id)
	}
	disp := stages.Disposition(r.code)
	e, _ := r.extra.([]any)
	if disp != stages.Admitted || len(e) != 4 {
		return disp, "", nil
	}
	id, _ := e[0].(string)
	tok, _ := e[1].(int64)
	owner, _ := e[2].(string)
	gen, _ := e[3].(string)
	g, _ := strconv.ParseUint(gen, 10, 64)
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.waiting[id]; t != nil { // submitted here: its caller learns now
		d.resolve(t, stages.Admitted, now, uint64(tok))
	}
	h := newTicket(d, stages.Job{ID: id, Owner: owner, Generation: g}, now)
	h.result, h.resolved = stages.Admitted, now
	h.lease = Lease{ID: id, Token: uint64(tok)}
	close(h.done)
	d.hold(h)
	return stages.Admitted, id, nil
}
