// Package callbackstore is the durable record of callbacks: the Callback,
// its states, the Store contract every callback store keeps (the SQLite
// file of one server, or redisqueue's stream shared by a fleet), and the
// SQLite store (OpenSQLite). It knows nothing of queues or admission:
// package fallback bounds and orders the callbacks it keeps here.
package callbackstore

import (
	"context"
	"errors"
	"time"
)

// Status is the state of a stored callback.
type Status string

// Callback states. Pending and Claimed are live; the rest are terminal.
const (
	StatusPending   Status = "pending"   // accepted, waiting for an operator
	StatusClaimed   Status = "claimed"   // an operator holds a lease on it
	StatusCompleted Status = "completed" // the operator called back
	StatusFailed    Status = "failed"    // the operator tried and gave up
	StatusExpired   Status = "expired"   // nobody claimed it within -callback-max-wait
)

// Live reports whether s is pending or claimed.
func (s Status) Live() bool { return s == StatusPending || s == StatusClaimed }

// Callback is one durable callback request.
type Callback struct {
	// Ref is the callback's reference, which the caller is told and an
	// operator quotes: "ticket" on the wire and in the store, for the
	// clients that read it, but no admission ticket (stages.Pending).
	Ref      string    `json:"ticket"`
	Call     string    `json:"call"`
	Turn     string    `json:"turn"`
	Number   string    `json:"number"` // E.164; redact before logging (Redact)
	Status   Status    `json:"status"`
	Accepted time.Time `json:"accepted"` // when the store accepted it; its age counts from here
	// Attempt counts claims. It is the fencing token of the current claim:
	// Complete and Fail with an older attempt are refused (ErrLeaseLost).
	Attempt    int       `json:"attempt"`
	Operator   string    `json:"operator,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Updated    time.Time `json:"updated"`
	Note       string    `json:"note,omitempty"` // completion note or failure reason
	// Tenant, when known, is whose share of the queue the callback uses
	// while it waits (a queue given a share enforces it); kept with the
	// record, so that a queue re-filled from it counts the share again.
	Tenant string `json:"tenant,omitempty"`
}

// Store errors. Implementations wrap them so callers can use errors.Is.
var (
	ErrNotFound  = errors.New("fallback: no such callback")
	ErrNotLive   = errors.New("fallback: callback is not in the required state")
	ErrLeaseLost = errors.New("fallback: claim superseded (lease expired or attempt mismatch)")
	// ErrQueueFull is Accept's refusal by a store that bounds pending
	// callbacks itself (fleet-wide, such as redisqueue.CallbackStore.Bound):
	// the caller is told Overloaded, as by a full callback stage.
	ErrQueueFull = errors.New("fallback: callback queue full")
)

// Store is the durable record of callbacks. Every method that
// returns nil has made its change durable: Accept returning nil is what
// lets the caller hear that a callback is booked. Implementations must be
// safe for concurrent use. The SQLite store (OpenSQLite) is the default.
//
// With a plain store the callback stage's bound is fallback.Service's
// claim gate, re-filled from the store at start-up: a bound per process. A
// store shared by a fleet is also the queue (fallback.CallbackQueue, such
// as redisqueue.CallbackStore) and bounds the fleet's callbacks itself: its
// Accept refuses with ErrQueueFull.
type Store interface {
	// Accept records c as pending unless a callback for (c.Call, c.Turn)
	// exists; it returns the stored callback and whether it was created.
	Accept(ctx context.Context, c Callback) (Callback, bool, error)
	// Find returns the callback for (call, turn), if there is one.
	Find(ctx context.Context, call, turn string) (Callback, bool, error)
	// Get returns the callback with ref.
	Get(ctx context.Context, ref string) (Callback, error)
	// List returns callbacks with one of statuses (all when empty), oldest
	// accepted first, at most limit of them (no limit when <= 0).
	List(ctx context.Context, limit int, statuses ...Status) ([]Callback, error)
	// Claim moves a pending callback to claimed by operator until the
	// lease ends, and increments its Attempt. ErrNotLive if not pending.
	Claim(ctx context.Context, ref, operator string, now, until time.Time) (Callback, error)
	// Return moves a claimed callback back to pending if attempt is still
	// its current attempt (a lease that ran out). ErrLeaseLost otherwise.
	Return(ctx context.Context, ref string, attempt int, now time.Time) error
	// Finish moves a claimed callback to StatusCompleted or StatusFailed
	// with note. attempt 0 skips the fencing check (operator override);
	// otherwise it must be the current attempt (ErrLeaseLost).
	Finish(ctx context.Context, ref string, attempt int, to Status, note string, now time.Time) (Callback, error)
	// Expire moves a pending callback to expired.
	Expire(ctx context.Context, ref string, now time.Time) error
	// Close releases the store.
	Close() error
}
