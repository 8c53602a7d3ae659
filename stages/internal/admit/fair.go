package admit

import (
	"fmt"
	"time"
)

// Order is the order in which a stage's waiting work takes a freed slot.
type Order uint8

const (
	// FIFO admits the oldest offer first, whoever's it is.
	FIFO Order = iota
	// Fair gives a freed slot to the tenants with waiting work in turn
	// (round robin: the tenant served least recently goes first, ties to
	// the earliest offer), and within a tenant to its oldest offer. Work
	// without a tenant is one tenant more. With one tenant waiting it is
	// FIFO. The tenant's share of the queue (Limits.TenantWaiting) still
	// caps what it may hold; Fair only decides who goes next, so that a
	// tenant bursting within its share delays the others by one turn each,
	// not by its whole backlog. Expiry is unchanged: the oldest work still
	// leaves the queue when it is too old, and work passed over by another
	// tenant's turn that then expires is counted (Ledger.ExpiredOvertaken).
	Fair
)

var orderNames = [...]string{"fifo", "fair"}

func (o Order) String() string {
	if int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// ParseOrder returns the order named s ("fifo" or "fair").
func ParseOrder(s string) (Order, error) {
	for i, n := range orderNames {
		if n == s {
			return Order(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown order %q (want fifo or fair)", ErrLimits, s)
}

// Set implements flag.Value.
func (o *Order) Set(s string) error {
	v, err := ParseOrder(s)
	if err == nil {
		*o = v
	}
	return err
}

// MarshalText encodes o as its name.
func (o Order) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText decodes a name, so that limits read back from JSON.
func (o *Order) UnmarshalText(b []byte) error { return o.Set(string(b)) }

// fairness keeps the tenants' turns: when each tenant with waiting work was
// last served, by a counter. A tenant leaves it when it has nothing
// waiting, so it holds at most one entry per waiting tenant.
type fairness struct {
	seq        uint64
	last       map[string]uint64
	untenanted int // waiting work without a tenant
}

func newFairness() fairness { return fairness{last: make(map[string]uint64)} }

func (f *fairness) served(tenant string) {
	f.seq++
	f.last[tenant] = f.seq
}

func (f *fairness) left(tenant string) { delete(f.last, tenant) }

// contended reports whether work of more than one tenant waits (work with
// no tenant counting as one): only then does Fair order differ from FIFO.
func (c *Controller) contended() bool {
	n := len(c.tenants)
	if c.fair.untenanted > 0 {
		n++
	}
	return n > 1
}

// takeFair admits the oldest work of the tenant served least recently (or
// expires it, if it is too old), with a slot known to be free. It runs
// under c.mu, after take found the head eligible.
func (c *Controller) takeFair(now time.Time) (Disposition, string, error) {
	best, bestSeq := -1, uint64(0)
	for i := 0; i < c.queue.len(); i++ {
		r := &c.recs[c.queue.at(i)]
		seq := c.fair.last[r.tenant] // 0: not served since it began waiting
		if best < 0 || seq < bestSeq {
			best, bestSeq = i, seq
			if seq == 0 {
				break
			}
		}
	}
	// An owner's work keeps its order even if it spans tenants: the
	// owner's earliest waiting work goes first.
	own := c.recs[c.queue.at(best)].own
	for i := 0; i < best; i++ {
		if c.recs[c.queue.at(i)].own == own {
			best = i
			break
		}
	}
	ref := c.queue.at(best)
	r := &c.recs[ref]
	if r.expires.Before(now) {
		id := r.id
		c.queue.removeAt(best)
		c.unqueue(r)
		c.expired(r)
		c.finish(ref, Expired)
		return Expired, id, nil
	}
	for i := 0; i < best; i++ { // the work passed over, should it expire
		c.recs[c.queue.at(i)].overtaken = true
	}
	if best > 0 {
		c.ledger.FairSkips++
	}
	c.queue.removeAt(best)
	c.fair.served(r.tenant) // before unqueue, which forgets a tenant left with nothing waiting
	c.unqueue(r)
	r.state = Active
	c.taken = ref
	c.leased++
	c.ledger.Admitted++
	return Admitted, r.id, nil
}

// expired counts work leaving the queue too old.
func (c *Controller) expired(r *record) {
	c.ledger.Expired++
	if r.overtaken {
		c.ledger.ExpiredOvertaken++
	}
}

// removeAt removes the i-th waiting index, keeping the order of the rest.
func (r *ring[T]) removeAt(i int) {
	for j := i; j > 0; j-- {
		r.buf[r.wrap(r.head+j)] = r.buf[r.wrap(r.head+j-1)]
	}
	r.pop()
}
