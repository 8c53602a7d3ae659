package redisstage

import (
	"context"
	"strconv"
	"strings"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/redis/go-redis/v9"
)

// listen applies the events the stage's scripts publish: a|id|token
// admitted, x|id expired, c|id cancelled while queued, k|id cancelled while
// active, l|id lease lost. Pub/sub delivers at most once; backstop covers
// what it drops.
func (d *Dispatcher) listen(ps *redis.PubSub) {
	defer d.wg.Done()
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-d.ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			d.event(m.Payload)
		}
	}
}

func (d *Dispatcher) event(p string) {
	kind, rest, _ := strings.Cut(p, "|")
	id, tok, _ := strings.Cut(rest, "|")
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch kind {
	case "a":
		n, _ := strconv.ParseUint(tok, 10, 64)
		d.settle(id, stages.Admitted, now, n)
	case "x":
		if t := d.waiting[id]; t != nil {
			d.resolve(t, stages.Expired, now, 0)
		}
	case "c":
		if t := d.waiting[id]; t != nil {
			d.resolve(t, stages.Cancelled, now, 0)
		}
	case "k":
		if t := d.held[id]; t != nil {
			t.markCancelled()
		}
	case "l":
		if t := d.held[id]; t != nil {
			t.markLost()
		}
	case "n": // the fleet's slot limit moved (SetSlots)
		d.s.learnSlots(id)
	}
}

// backstop pumps and reconciles while this replica has waiting or
// abandoned tickets, and resolves Expired here a ticket still undecided past
// its deadline by the grace (the store cannot be reached, or forgot it).
func (d *Dispatcher) backstop() {
	defer d.wg.Done()
	// The poll runs on the store's wall clock, not d.clock: it covers lost
	// messages, whatever a test's manual clock says.
	tick := clock.NewTicker(d.s.opt.Wall, d.poll)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
		now := d.clock.Now()
		late := d.s.limits.MaxAge + d.grace
		d.abandon(stages.Expired, now, func(j stages.Job) bool { return now.After(deadline(j, d.s.limits.MaxAge).Add(d.grace)) })
		d.mu.Lock()
		ids := make([]string, 0, len(d.waiting)+len(d.abandoned))
		for id, t := range d.waiting {
			// A ticket whose offer is still in flight has no record yet:
			// reconciling it would find nothing and cancel it.
			if t.offered {
				ids = append(ids, id)
			}
		}
		for id, at := range d.abandoned {
			// Past a lease TTL the store has let go of it by itself.
			if now.Sub(at) > d.s.opt.LeaseTTL+late {
				delete(d.abandoned, id)
				continue
			}
			ids = append(ids, id)
		}
		d.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		d.pumpNow()
		d.reconcile(ids)
	}
}

// reconcile resolves waiting tickets whose outcome this replica missed, and
// withdraws abandoned ones from the store: a queued one is cancelled there,
// a granted lease released.
func (d *Dispatcher) reconcile(ids []string) {
	ctx, cancel := context.WithTimeout(d.ctx, d.poll*5)
	defer cancel()
	ds, toks, err := d.s.states(ctx, ids...)
	if err != nil {
		return
	}
	now := d.clock.Now()
	var withdraw []string
	d.mu.Lock()
	for i, id := range ids {
		t := d.waiting[id]
		if t == nil {
			if _, ok := d.abandoned[id]; ok {
				switch {
				case ds[i] == stages.Queued:
					withdraw = append(withdraw, id)
				case toks[i] > 0 && (ds[i] == admit.Active || ds[i] == stages.Cancelled) && !d.claim:
					delete(d.abandoned, id)
					d.releaseAbandoned(Lease{ID: id, Token: toks[i]})
				default:
					delete(d.abandoned, id)
				}
			}
			continue
		}
		switch ds[i] {
		case stages.Queued:
		case admit.Active:
			d.resolve(t, stages.Admitted, now, toks[i])
		case stages.Cancelled:
			if toks[i] > 0 { // admitted, then cancelled while active
				d.resolve(t, stages.Admitted, now, toks[i])
				t.markCancelled()
			} else {
				d.resolve(t, stages.Cancelled, now, 0)
			}
		case stages.Expired:
			d.resolve(t, stages.Expired, now, 0)
		default:
			// Unknown: the record is gone (its tombstone evicted, or Redis
			// lost its data). The work will never be admitted.
			d.resolve(t, stages.Cancelled, now, 0)
		}
	}
	d.mu.Unlock()
	for _, id := range withdraw {
		if _, r, err := d.s.cancel(ctx, id, now, d.pump); err == nil {
			d.apply(r, now)
		}
	}
}
