package stages

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable reports that the store behind a stage could not be reached
// or is not ready. Admission fails closed: an Offer or Submit that meets it
// returns Closed together with an error wrapping ErrUnavailable, so a caller
// that looks only at the disposition still refuses, and a caller that looks
// at the error can tell the user the truth ("we cannot take this right now").
var ErrUnavailable = errors.New("stages: store unavailable")

// ErrFenced reports that a lease was lost (its TTL ran out, or the store lost
// it) and a newer fencing token may be in use: the stale holder may neither
// release nor renew it.
var ErrFenced = errors.New("stages: lease fenced")

// Store is the stage contract with the store made explicit: the operations of
// Controller, each taking a context and returning the errors a remote store
// can meet. Local adapts a Controller; package stages/redisstage implements
// it on Redis. The conformance suite in package stagestest runs one set of
// contract tests against every Store.
type Store interface {
	Offer(ctx context.Context, job Job, now time.Time) (Disposition, error)
	Take(ctx context.Context, now time.Time) (Disposition, string, error)
	Release(ctx context.Context, id string) (Disposition, error)
	Rotate(ctx context.Context, owner string, generation uint64, now time.Time) error
	Forget(ctx context.Context, owner string, now time.Time) error
	Cancel(ctx context.Context, id string, now time.Time) (Disposition, error)
	Close(ctx context.Context) error
	Reopen(ctx context.Context) error
	State(ctx context.Context, id string) (Disposition, bool, error)
	Generation(ctx context.Context, owner string) (uint64, bool, error)
	Snapshot(ctx context.Context, now time.Time) (Snapshot, error)
}

// Local returns c as a Store. Its operations never fail for lack of a store.
func Local(c *Controller) Store { return localStore{c} }

type localStore struct{ c *Controller }

func (s localStore) Offer(_ context.Context, job Job, now time.Time) (Disposition, error) {
	return s.c.Offer(job, now)
}

func (s localStore) Take(_ context.Context, now time.Time) (Disposition, string, error) {
	return s.c.Take(now)
}

func (s localStore) Release(_ context.Context, id string) (Disposition, error) {
	return s.c.Release(id)
}

func (s localStore) Rotate(_ context.Context, owner string, gen uint64, now time.Time) error {
	return s.c.RotateAt(owner, gen, now)
}

func (s localStore) Forget(_ context.Context, owner string, now time.Time) error {
	s.c.ForgetAt(owner, now)
	return nil
}

func (s localStore) Cancel(_ context.Context, id string, now time.Time) (Disposition, error) {
	return s.c.CancelAt(id, now)
}

func (s localStore) Close(context.Context) error  { s.c.Close(); return nil }
func (s localStore) Reopen(context.Context) error { s.c.Reopen(); return nil }

func (s localStore) State(_ context.Context, id string) (Disposition, bool, error) {
	d, ok := s.c.State(id)
	return d, ok, nil
}

func (s localStore) Generation(_ context.Context, owner string) (uint64, bool, error) {
	g, ok := s.c.Generation(owner)
	return g, ok, nil
}

func (s localStore) Snapshot(_ context.Context, now time.Time) (Snapshot, error) {
	return s.c.SnapshotAt(now), nil
}

// Pending is queued work waiting for its outcome; *Ticket satisfies it.
type Pending interface {
	// Done is closed once the outcome is known.
	Done() <-chan struct{}
	// Result reports Admitted, Expired or Cancelled and when it was decided;
	// valid once Done is closed.
	Result() (Disposition, time.Time)
	// Wait blocks until the outcome or ctx is done. Giving up on waiting
	// does not withdraw the work: call Gate.Cancel for that.
	Wait(ctx context.Context) (Disposition, error)
}

// Gate is admission with time owned: what a server programs against, so that
// it can run on the in-process Dispatcher (LocalGate) or on a fleet-wide store
// (redisstage.Dispatcher) without knowing which.
type Gate interface {
	// Submit offers job now. Refused work returns its disposition and a nil
	// Pending; queued work returns Queued and a Pending that may already be
	// resolved. When the store is unreachable it returns Closed and an
	// error wrapping ErrUnavailable.
	Submit(ctx context.Context, job Job) (Pending, Disposition, error)
	// Release returns id's lease and admits waiting work into the slot.
	Release(ctx context.Context, id string) (Disposition, error)
	// Rotate advances owner's generation; its queued work is cancelled
	// everywhere the gate reaches before Rotate returns.
	Rotate(ctx context.Context, owner string, generation uint64) error
	// Forget ends owner's conversation.
	Forget(ctx context.Context, owner string) error
	// Cancel withdraws one piece of work.
	Cancel(ctx context.Context, id string) (Disposition, error)
	// Snapshot reports inventory and ledger now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Ready reports nil when admission can be decided (for /readyz).
	Ready(ctx context.Context) error
	// Stop ends the gate's timers and goroutines.
	Stop()
}

// LocalGate returns d as a Gate.
func LocalGate(d *Dispatcher) Gate { return localGate{d} }

type localGate struct{ d *Dispatcher }

func (g localGate) Submit(_ context.Context, job Job) (Pending, Disposition, error) {
	t, disp, err := g.d.Submit(job)
	if t == nil {
		return nil, disp, err
	}
	return t, disp, err
}

func (g localGate) Release(_ context.Context, id string) (Disposition, error) {
	return g.d.Release(id)
}

func (g localGate) Rotate(_ context.Context, owner string, gen uint64) error {
	return g.d.Rotate(owner, gen)
}

func (g localGate) Forget(_ context.Context, owner string) error {
	g.d.Forget(owner)
	return nil
}

func (g localGate) Cancel(_ context.Context, id string) (Disposition, error) {
	return g.d.Cancel(id)
}

func (g localGate) Snapshot(context.Context) (Snapshot, error) {
	return g.d.Controller().SnapshotAt(g.d.Clock().Now()), nil
}

func (g localGate) Ready(context.Context) error { return nil }
func (g localGate) Stop()                       { g.d.Stop() }
