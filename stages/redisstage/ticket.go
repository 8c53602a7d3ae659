package redisstage

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Ticket is work submitted through a Dispatcher. It satisfies
// stages.Pending. Once admitted it holds a Lease, renewed by a goroutine the
// ticket owns until Release or the Dispatcher stops.
type Ticket struct {
	Job     stages.Job
	Offered time.Time

	d        *Dispatcher
	done     chan struct{}
	result   stages.Disposition
	resolved time.Time
	lease    Lease      // set at admission; its token changes only under leaseMu
	leaseMu  sync.Mutex // the renewer may grant the lease again (data loss)
	offered  bool       // the offer script has returned Queued; under d.mu

	lost, cancelled         chan struct{}
	lostOnce, cancelledOnce sync.Once
	stopRenew               context.CancelFunc
}

var _ stages.Pending = (*Ticket)(nil)

func newTicket(d *Dispatcher, job stages.Job, now time.Time) *Ticket {
	return &Ticket{Job: job, Offered: now, d: d, done: make(chan struct{}),
		lost: make(chan struct{}), cancelled: make(chan struct{})}
}

// Done is closed once the ticket has its outcome.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Result reports Admitted, Expired or Cancelled and when this replica learnt
// it; valid once Done is closed.
func (t *Ticket) Result() (stages.Disposition, time.Time) { return t.result, t.resolved }

// Wait blocks until the ticket has its outcome or ctx is done. Giving up on
// waiting does not withdraw the work: call Dispatcher.Cancel for that.
func (t *Ticket) Wait(ctx context.Context) (stages.Disposition, error) {
	select {
	case <-t.done:
		return t.result, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Lease reports the lease of admitted work, with its fencing token, for a
// backend that checks tokens.
func (t *Ticket) Lease() (Lease, bool) {
	select {
	case <-t.done:
		return t.currentLease(), t.result == stages.Admitted
	default:
		return Lease{}, false
	}
}

// Lost is closed when the lease was lost: renewal was refused as fenced or
// could not reach Redis for a whole TTL. The work must stop: its slot may
// already be another's.
func (t *Ticket) Lost() <-chan struct{} { return t.lost }

// Cancelled is closed when admitted work was cancelled (by Rotate, Forget or
// Cancel on any replica): it has lost its right to speak and should stop,
// then Release.
func (t *Ticket) Cancelled() <-chan struct{} { return t.cancelled }

// Position reports the ticket's place in the fleet-wide queue, 1 being the
// head, or false once it has left it.
func (t *Ticket) Position(ctx context.Context) (int, bool, error) {
	return t.d.s.Position(ctx, t.Job.ID)
}

func (t *Ticket) currentLease() Lease {
	t.leaseMu.Lock()
	defer t.leaseMu.Unlock()
	return t.lease
}

func (t *Ticket) setLease(l Lease) {
	t.leaseMu.Lock()
	t.lease = l
	t.leaseMu.Unlock()
}

func (t *Ticket) markLost()      { t.lostOnce.Do(func() { close(t.lost) }) }
func (t *Ticket) markCancelled() { t.cancelledOnce.Do(func() { close(t.cancelled) }) }
