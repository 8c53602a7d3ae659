package redisstage

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// waitingArg is the waiting bound as the scripts take it: with "f" after it
// under Fair order.
func (s *Store) waitingArg() string {
	w := strconv.Itoa(s.limits.Waiting)
	if s.limits.Order == stages.Fair {
		w += "f"
	}
	return w
}

var (
	_ admit.SlotLimiter = (*Store)(nil)
	_ admit.SlotLimiter = (*Dispatcher)(nil)
)

// SetSlots sets the stage's slot limit fleet-wide when it is still old (0:
// whatever it is), as admit.SlotLimiter: one limit for every replica,
// held in Redis, so that an adaptive rule on any replica moves the one
// limit (a compare and set, so that two replicas' changes never cross).
// A lowered limit revokes no lease; a raised one admits waiting work at
// once through a Dispatcher (a Store alone admits only by Take). It
// returns the limit in force after.
func (s *Store) SetSlots(ctx context.Context, old, n int) (int, error) {
	got, _, err := s.setSlots(ctx, old, n, 0, s.opt.Wall.Now())
	return got, err
}

func (s *Store) setSlots(ctx context.Context, old, n, pump int, now time.Time) (int, reply, error) {
	if n < 1 {
		return 0, reply{}, fmt.Errorf("%w: slots %d (need >= 1)", admit.ErrLimits, n)
	}
	r, err := s.run(ctx, setSlotsScript, pump, now, old, n)
	if err != nil {
		return 0, r, err
	}
	s.slots.Store(r.code)
	return int(r.code), r, nil
}

// SetSlots sets the fleet's slot limit (Store.SetSlots) and settles the
// tickets a raised limit admitted.
func (d *Dispatcher) SetSlots(ctx context.Context, old, n int) (int, error) {
	now := d.clock.Now()
	got, r, err := d.s.setSlots(ctx, old, n, n+d.s.limits.Waiting, now)
	if err == nil {
		d.apply(r, now)
	}
	return got, err
}

// learnSlots records a limit another replica set (event n).
func (s *Store) learnSlots(v string) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		s.slots.Store(n)
	}
}
