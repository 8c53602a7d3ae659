package redisstage

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// Snapshot is a stages.Snapshot of the fleet-wide stage plus what only a
// fleet has.
type Snapshot struct {
	stages.Snapshot
	// Warm is false while admission is closed after Redis lost its data.
	Warm bool `json:"warm"`
}

// Check verifies the ledger against the inventory. Leases whose TTL ran
// out before Release (the holder died or lost contact) are in
// Ledger.Lost, a terminal count.
func (s Snapshot) Check() error { return s.Ledger.Check(s.Queued, s.Leased) }

// Snapshot reports the stage's inventory and ledger with ages at now, as
// admit.Controller.Snapshot. Leases lost to their TTL are counted in
// Ledger.Lost.
func (s *Store) Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	fs, err := s.FleetSnapshot(ctx, now)
	return fs.Snapshot, err
}

// FleetSnapshot is Snapshot with the fleet's own counts.
func (s *Store) FleetSnapshot(ctx context.Context, now time.Time) (Snapshot, error) {
	r, err := s.run(ctx, snapshotScript, 0, now)
	if err != nil {
		return Snapshot{}, err
	}
	v, _ := r.extra.([]any)
	if len(v) < 8 {
		return Snapshot{}, fmt.Errorf("redisstage: %s snapshot: malformed reply: %d fields, want 8", s.name, len(v))
	}
	num := func(x any) int { n, _ := x.(int64); return int(n) }
	out := Snapshot{Snapshot: stages.Snapshot{
		Limits:     s.limits,
		Closed:     num(v[0]) == 1,
		Leased:     num(v[2]),
		Owners:     num(v[3]),
		Tombstones: num(v[4]),
		At:         now,
	}, Warm: num(v[1]) == 1}
	kv, _ := v[5].([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		vs, _ := kv[i+1].(string)
		n, _ := strconv.ParseUint(vs, 10, 64)
		l := &out.Ledger
		switch k {
		case "offered":
			l.Offered = n
		case "queued":
			l.Queued = n
		case "admitted":
			l.Admitted = n
		case "expired":
			l.Expired = n
		case "cq":
			l.CancelledQueued = n
		case "ca":
			l.CancelledActive = n
		case "completed":
			l.Completed = n
		case "failed":
			l.Failed = n
		case "rc":
			l.ReleasedCancelled = n
		case "lost":
			l.Lost = n
		case "r3":
			l.Refused.Overloaded = n
		case "r4":
			l.Refused.Expired = n
		case "r5":
			l.Refused.Stale = n
		case "r6":
			l.Refused.OutOfOrder = n
		case "r7":
			l.Refused.Closed = n
		case "os":
			l.Refused.OverShare = n
		case "fs":
			l.FairSkips = n
		case "xo":
			l.ExpiredOvertaken = n
		}
	}
	borns, _ := v[6].([]any)
	out.Queued = len(borns)
	for _, b := range borns {
		bs, _ := b.(string)
		if age := now.Sub(unstamp(bs)); bs != "" && age > out.OldestQueued {
			out.OldestQueued = age
		}
	}
	if len(v) > 8 { // the limit in force, fleet-wide (SetSlots)
		if n := num(v[8]); n > 0 {
			out.Limits.Slots = n
			s.slots.Store(int64(n))
		}
	}
	cl, _ := v[7].([]any)
	out.CleanupPending = len(cl)
	for _, c := range cl {
		cs, _ := c.(string)
		if age := now.Sub(unstamp(cs)); cs != "" && age > out.OldestCleanup {
			out.OldestCleanup = age
		}
	}
	return out, nil
}
