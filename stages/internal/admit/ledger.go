package admit

import (
	"fmt"
	"time"
)

// Refused counts offers turned away before retention, by disposition.
type Refused struct {
	Stale      uint64 `json:"stale"`
	OutOfOrder uint64 `json:"out_of_order"`
	Expired    uint64 `json:"expired"`
	Closed     uint64 `json:"closed"`
	Overloaded uint64 `json:"overloaded"`
	// OverShare counts the Overloaded offers refused because their tenant
	// held its whole share of the queue (Limits.TenantWaiting). It is part
	// of Overloaded, not added to it.
	OverShare uint64 `json:"over_share,omitempty"`
}

func (r *Refused) add(d Disposition) {
	switch d {
	case Stale:
		r.Stale++
	case OutOfOrder:
		r.OutOfOrder++
	case Expired:
		r.Expired++
	case Closed:
		r.Closed++
	case Overloaded:
		r.Overloaded++
	}
}

// Total is the number of refused offers.
func (r Refused) Total() uint64 {
	return r.Stale + r.OutOfOrder + r.Expired + r.Closed + r.Overloaded
}

// Ledger is the conservation ledger of a stage. Each identity is counted
// once at each named transition, so the counts reconcile with the inventory:
//
//	Offered = Refused.Total() + queued now + leased now + Terminal()
type Ledger struct {
	Offered           uint64  `json:"offered"`
	Refused           Refused `json:"refused"`
	Queued            uint64  `json:"queued"`             // entered the queue
	Admitted          uint64  `json:"admitted"`           // took a lease
	Expired           uint64  `json:"expired"`            // left the queue too old
	CancelledQueued   uint64  `json:"cancelled_queued"`   // left the queue by Rotate or Forget
	CancelledActive   uint64  `json:"cancelled_active"`   // lost its right to speak while leased
	Completed         uint64  `json:"completed"`          // released after completing
	Failed            uint64  `json:"failed,omitempty"`   // released after its backend failed (ReleaseFailed)
	ReleasedCancelled uint64  `json:"released_cancelled"` // released after cancellation: cleanup confirmed
	// Lost counts leases that ended without Release because their TTL ran
	// out (the holder died or lost contact with a fleet-wide store). The
	// in-process Controller never loses a lease, so it is always zero there.
	Lost uint64 `json:"lost,omitempty"`
	// FairSkips counts the slots Fair order (Limits.Order) gave to a tenant
	// whose work was not the oldest waiting; ExpiredOvertaken the work so
	// passed over that then expired (part of Expired, not added to it): the
	// refusals fair order caused.
	FairSkips        uint64 `json:"fair_skips,omitempty"`
	ExpiredOvertaken uint64 `json:"expired_overtaken,omitempty"`
}

// Terminal is the number of identities in a terminal state.
func (l Ledger) Terminal() uint64 {
	return l.Expired + l.CancelledQueued + l.Completed + l.Failed + l.ReleasedCancelled + l.Lost
}

// Released is the number of leases returned by a release: completed,
// failed, or cancelled and cleaned up.
func (l Ledger) Released() uint64 { return l.Completed + l.Failed + l.ReleasedCancelled }

// Cancelled is the number of identities cancelled, queued or active.
func (l Ledger) Cancelled() uint64 { return l.CancelledQueued + l.CancelledActive }

// Check verifies the conservation invariant against an inventory of queued
// and leased work, and the internal consistency of the transitions.
func (l Ledger) Check(queued, leased int) error {
	if got := l.Refused.Total() + uint64(queued) + uint64(leased) + l.Terminal(); got != l.Offered {
		return fmt.Errorf("stages: ledger does not balance: offered %d, refused %d + queued %d + leased %d + terminal %d = %d",
			l.Offered, l.Refused.Total(), queued, leased, l.Terminal(), got)
	}
	if l.Queued != l.Offered-l.Refused.Total() {
		return fmt.Errorf("stages: ledger: queued %d != offered %d - refused %d", l.Queued, l.Offered, l.Refused.Total())
	}
	if got := l.Admitted; got != uint64(leased)+l.Released()+l.Lost {
		return fmt.Errorf("stages: ledger: admitted %d != leased %d + released %d + lost %d", got, leased, l.Released(), l.Lost)
	}
	return nil
}

// Snapshot is a consistent view of a stage at one instant.
type Snapshot struct {
	Limits         Limits        `json:"limits"`
	Policy         Policy        `json:"policy"`
	Closed         bool          `json:"closed"`
	Queued         int           `json:"queued"`
	Leased         int           `json:"leased"`
	CleanupPending int           `json:"cleanup_pending"`   // leased work cancelled, awaiting Release
	OldestCleanup  time.Duration `json:"oldest_cleanup_ns"` // age of the oldest pending cleanup
	OldestQueued   time.Duration `json:"oldest_queued_ns"`  // age of the oldest waiting work
	Owners         int           `json:"owners"`            // owners with a current generation
	Tombstones     int           `json:"tombstones"`        // terminal records retained
	Ledger         Ledger        `json:"ledger"`
	// TakeErrors counts the times the stage's dispatcher could not take
	// waiting work (Take failed: a clock that went backwards). Zero where
	// no Dispatcher is involved.
	TakeErrors uint64 `json:"take_errors,omitempty"`
	// Adaptive is the adaptive slot limit's state (AdaptiveGate): nil for
	// a fixed limit.
	Adaptive *AdaptiveStatus `json:"adaptive,omitempty"`
	At       time.Time       `json:"at"`
}

// Snapshot reports the controller's inventory and ledger, with ages measured
// at now.
func (c *Controller) Snapshot(now time.Time) Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		Limits:         c.limits,
		Policy:         c.policy,
		Closed:         c.closed,
		Queued:         c.queue.len(),
		Leased:         c.leased,
		CleanupPending: c.cleanup,
		Owners:         len(c.owners),
		Tombstones:     c.ids.tombstones(),
		Ledger:         c.ledger,
		At:             now,
	}
	for i := 0; i < c.queue.len(); i++ {
		if age := now.Sub(c.recs[c.queue.at(i)].born); age > s.OldestQueued {
			s.OldestQueued = age
		}
	}
	if c.cleanup > 0 {
		for i := range c.recs { // free entries are zero: never Cancelled
			if r := &c.recs[i]; r.state == Cancelled && !r.returned {
				if age := now.Sub(r.cancelled); age > s.OldestCleanup {
					s.OldestCleanup = age
				}
			}
		}
	}
	return s
}

// Waiter describes one piece of waiting work, for operators.
type Waiter struct {
	ID       string        `json:"id"`
	Owner    string        `json:"owner"`
	Position int           `json:"position"` // 1 is the head of the queue
	Age      time.Duration `json:"age_ns"`
}

// Waiting lists the queue in order with each ticket's age at now.
func (c *Controller) Waiting(now time.Time) []Waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Waiter, 0, c.queue.len())
	for i := 0; i < c.queue.len(); i++ {
		r := c.recs[c.queue.at(i)]
		out = append(out, Waiter{ID: r.id, Owner: r.own.id, Position: i + 1, Age: now.Sub(r.born)})
	}
	return out
}

// Position reports id's place in the queue, 1 being the head, or false when
// id is not waiting.
func (c *Controller) Position(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < c.queue.len(); i++ {
		if c.recs[c.queue.at(i)].id == id {
			return i + 1, true
		}
	}
	return 0, false
}

// Next returns the job that carries j's work into the next stage: a new
// identity, the same owner, generation and tenant, and the same Born, so
// that the caller's wait is one budget across every stage and no stage
// makes old work look new.
func (j Job) Next(id string) Job {
	return Job{ID: id, Owner: j.Owner, Generation: j.Generation, Born: j.Born, Tenant: j.Tenant}
}
