package admit

import (
	"context"
	"errors"
	"github.com/frontdoorhq/frontdoor/media/clock"
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
// can meet. LocalStore adapts a Controller; package stages/redisstage implements
// it on Redis. The conformance suite in package stagestest runs one set of
// contract tests against every Store.
type Store interface {
	Offer(ctx context.Context, job Job, now time.Time) (Disposition, error)
	Take(ctx context.Context, now time.Time) (Disposition, string, error)
	Release(ctx context.Context, id string) (Disposition, error)
	// ReleaseFailed is Release after the work's backend failed: counted
	// Failed, not Completed (Controller.ReleaseFailed).
	ReleaseFailed(ctx context.Context, id string) (Disposition, error)
	Rotate(ctx context.Context, owner string, generation uint64, now time.Time) error
	Forget(ctx context.Context, owner string, now time.Time) error
	Cancel(ctx context.Context, id string, now time.Time) (Disposition, error)
	Close(ctx context.Context) error
	Reopen(ctx context.Context) error
	State(ctx context.Context, id string) (Disposition, bool, error)
	Generation(ctx context.Context, owner string) (uint64, bool, error)
	Snapshot(ctx context.Context, now time.Time) (Snapshot, error)
}

// LocalStore returns c as a Store. Its operations never fail for lack of a
// store.
func LocalStore(c *Controller) Store { return localStore{c} }

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

func (s localStore) ReleaseFailed(_ context.Context, id string) (Disposition, error) {
	return s.c.ReleaseFailed(id)
}

func (s localStore) Rotate(_ context.Context, owner string, gen uint64, now time.Time) error {
	return s.c.Rotate(owner, gen, now)
}

func (s localStore) Forget(_ context.Context, owner string, now time.Time) error {
	s.c.Forget(owner, now)
	return nil
}

func (s localStore) Cancel(_ context.Context, id string, now time.Time) (Disposition, error) {
	return s.c.Cancel(id, now)
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
	return s.c.Snapshot(now), nil
}

// Pending is queued work waiting for its outcome; *Ticket and
// redisstage's *Ticket satisfy it.
type Pending interface {
	// Done is closed once the outcome is known.
	Done() <-chan struct{}
	// Result reports Admitted, Expired or Cancelled and when it was decided;
	// valid once Done is closed.
	Result() (Disposition, time.Time)
	// Wait blocks until the outcome or ctx is done. Giving up on waiting
	// does not withdraw the work: call Gate.Cancel for that.
	Wait(ctx context.Context) (Disposition, error)
	// Position is the work's place in the queue, 1 being the head, while
	// it waits; false once it has left the queue.
	Position(ctx context.Context) (int, bool, error)
	// Lost is closed when the lease admitted for this work was lost (a
	// fleet-wide store could not renew it for a whole TTL, or fenced it):
	// the slot may be someone else's already, so the work must stop. It is
	// nil, which never closes, where a lease cannot be lost.
	Lost() <-chan struct{}
}

// View is the read-only side of a stage: what operators are shown
// (/v1/stages, /metrics, the demo page). A Gate is a View; so is a stage
// whose work is admitted by an owner of its own (ViewOf).
type View interface {
	// Snapshot reports limits, inventory and the ledger now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Waiting lists the queue in order (empty where the queue is shown
	// only by its counts, as a fleet-wide one is).
	Waiting(ctx context.Context) ([]Waiter, error)
}

// Gate is admission with time owned: what a server programs against, so that
// it can run on the in-process Dispatcher (LocalGate) or on a fleet-wide store
// (redisstage.Dispatcher) without knowing which, and be decorated (Guard,
// FailClosed) without the server knowing that either. Every method that may
// wait takes a context.
type Gate interface {
	View
	// Submit offers job now. Refused work returns its disposition and a nil
	// Pending; queued work returns Queued and a Pending that may already be
	// resolved. When the store is unreachable it returns Closed and an
	// error wrapping ErrUnavailable.
	Submit(ctx context.Context, job Job) (Pending, Disposition, error)
	// Release returns id's lease and admits waiting work into the slot.
	Release(ctx context.Context, id string) (Disposition, error)
	// ReleaseFailed is Release after the work's backend failed: the
	// ledger counts it Failed, not Completed.
	ReleaseFailed(ctx context.Context, id string) (Disposition, error)
	// Rotate advances owner's generation; its queued work is cancelled
	// everywhere the gate reaches before Rotate returns. A generation not
	// above the owner's current one returns an error wrapping
	// ErrGeneration: the owner is already past it.
	Rotate(ctx context.Context, owner string, generation uint64) error
	// Forget ends owner's conversation.
	Forget(ctx context.Context, owner string) error
	// Cancel withdraws one piece of work.
	Cancel(ctx context.Context, id string) (Disposition, error)
	// Ready reports nil when admission can be decided (for /readyz).
	Ready(ctx context.Context) error
	// Stop ends the gate's timers and goroutines.
	Stop()
}

// Local is the in-process gate: a Controller driven by a Dispatcher, as a
// Gate and a ClaimGate (Claim admits as Take would unless the Dispatcher
// was made ClaimOnly) and a SlotLimiter. Its operations never fail for lack
// of a store. Beyond the contract it answers what the owner of an
// in-process queue asks of it synchronously: State, Close and Reopen.
type Local struct{ d *Dispatcher }

// LocalGate returns d as a Gate.
func LocalGate(d *Dispatcher) *Local { return &Local{d} }

// Submit offers job now (Dispatcher.Submit).
func (g *Local) Submit(_ context.Context, job Job) (Pending, Disposition, error) {
	t, disp, err := g.d.Submit(job)
	if t == nil {
		return nil, disp, err
	}
	return t, disp, err
}

// Release returns id's lease (Dispatcher.Release).
func (g *Local) Release(_ context.Context, id string) (Disposition, error) {
	return g.d.Release(id)
}

// ReleaseFailed returns id's lease after its backend failed.
func (g *Local) ReleaseFailed(_ context.Context, id string) (Disposition, error) {
	return g.d.ReleaseFailed(id)
}

// Rotate advances owner's generation (Dispatcher.Rotate).
func (g *Local) Rotate(_ context.Context, owner string, gen uint64) error {
	return g.d.Rotate(owner, gen)
}

// Forget ends owner's conversation.
func (g *Local) Forget(_ context.Context, owner string) error {
	g.d.Forget(owner)
	return nil
}

// Cancel withdraws one piece of work.
func (g *Local) Cancel(_ context.Context, id string) (Disposition, error) {
	return g.d.Cancel(id)
}

// Snapshot reports limits, inventory and the ledger now.
func (g *Local) Snapshot(context.Context) (Snapshot, error) {
	sn := g.d.Controller().Snapshot(g.d.Clock().Now())
	sn.TakeErrors = g.d.TakeErrors()
	return sn, nil
}

// Waiting lists the queue in order.
func (g *Local) Waiting(context.Context) ([]Waiter, error) {
	return g.d.Controller().Waiting(g.d.Clock().Now()), nil
}

// Ready is always nil: an in-process gate can always decide.
func (g *Local) Ready(context.Context) error { return nil }

// Stop ends the dispatcher's timer (Dispatcher.Stop).
func (g *Local) Stop() { g.d.Stop() }

// State reports id's disposition (Controller.State): Queued, Active or a
// terminal one, false when id is unknown.
func (g *Local) State(id string) (Disposition, bool) { return g.d.Controller().State(id) }

// Close closes admission: offers are refused Closed; queued work still runs.
func (g *Local) Close() { g.d.Close() }

// Reopen opens admission again.
func (g *Local) Reopen() { g.d.Reopen() }

// ViewOf shows c, whose work its owner offers and releases directly (such as
// a fallback queue that admits on a human's claim), as a View.
func ViewOf(c *Controller, clk clock.Clock) View {
	if clk == nil {
		clk = clock.System
	}
	return controllerView{c, clk}
}

type controllerView struct {
	c   *Controller
	clk clock.Clock
}

func (v controllerView) Snapshot(context.Context) (Snapshot, error) {
	return v.c.Snapshot(v.clk.Now()), nil
}

func (v controllerView) Waiting(context.Context) ([]Waiter, error) {
	return v.c.Waiting(v.clk.Now()), nil
}

// ViewFunc is a View known by its snapshots alone, such as a fleet-wide
// queue whose inventory lives in Redis. It must not wait long: it is
// called on every scrape.
type ViewFunc func() Snapshot

// Snapshot returns f().
func (f ViewFunc) Snapshot(context.Context) (Snapshot, error) { return f(), nil }

// Waiting is empty: the queue is shown by its counts.
func (f ViewFunc) Waiting(context.Context) ([]Waiter, error) { return nil, nil }
