package admit

import "time"

// Op names an operation on a Controller, as a Recorder sees it.
type Op uint8

// The operations a Recorder sees. OpStop is the Dispatcher's: its timer
// ended (Dispatcher.Stop), so expiry is reported only when work is taken.
const (
	OpOffer Op = iota + 1
	OpTake
	OpRelease
	OpCancel
	OpRotate
	OpForget
	OpClose
	OpReopen
	OpStop
	// OpLimit is a change of the slot limit (Controller.SetSlots).
	OpLimit
)

var opNames = [...]string{
	OpOffer:   "offer",
	OpTake:    "take",
	OpRelease: "release",
	OpCancel:  "cancel",
	OpRotate:  "rotate",
	OpForget:  "forget",
	OpClose:   "close",
	OpReopen:  "reopen",
	OpStop:    "stop",
	OpLimit:   "limit",
}

func (o Op) String() string {
	if o == 0 || int(o) >= len(opNames) {
		return "invalid"
	}
	return opNames[o]
}

// Operation is one operation on a Controller and its outcome. Only the
// fields of its Op are set.
type Operation struct {
	Op Op
	// At is the time the operation was given. Release, Close and Reopen
	// take none from a Controller's callers: they are dated by their
	// Dispatcher's clock, or else at the latest time the Controller was
	// given (zero before any).
	At time.Time
	// ID is the offered job (OpOffer), the job taken (OpTake, when Admitted
	// or Expired), released (OpRelease) or cancelled (OpCancel).
	ID         string
	Owner      string    // OpOffer, OpRotate, OpForget
	Generation uint64    // OpOffer, OpRotate
	Born       time.Time // OpOffer
	Deadline   time.Time // OpOffer: the job's own, if it had one (Job.Deadline)
	Tenant     string    // OpOffer
	Slots      int       // OpLimit: the new slot limit
	// Disposition is what the operation returned (OpOffer, OpTake,
	// OpRelease, OpCancel); zero when it returned an error.
	Disposition Disposition
	// Err is the misuse error the operation returned (ErrDuplicate,
	// ErrGeneration, ErrNoLease, ErrClock, or ErrJob for an unknown
	// identity given to Cancel). An Offer refused with ErrJob for an
	// invalid job is not recorded: it reaches no state.
	Err error
}

// Recorder sees every operation that changes or may change a Controller's
// state, with its outcome, in the order they take effect: the sequence a
// replay of the stage re-runs (package stages/trace records it as a trace).
// Reads (State, Snapshot, Waiting, Position, Generation) are not recorded.
//
// Record is called with the controller's lock held. It must return at once
// (a recorder that cannot keep up drops, it never waits), must not call the
// Controller, and must not retain anything but the Operation's values.
type Recorder interface {
	Record(Operation)
}

// WithRecorder gives every operation of the Controller, with its outcome,
// to r. Without it (or with a nil r) nothing is recorded and the admission
// path pays one nil check per operation. A Recorder belongs to one
// Controller: its operations are serialized by that controller's lock.
func WithRecorder(r Recorder) Option {
	return func(c *Controller) { c.rec = r }
}

// record gives op to the recorder; it runs under c.mu, only when c.rec is
// set, and is kept out of line so that the admission path stays small.
//
//go:noinline
func (c *Controller) record(op Operation) { c.rec.Record(op) }

// recordUnlock records op and unlocks c.mu, deferred so that a Recorder
// that panics does not leave the controller locked. Offer, Take and Release
// unlock without a defer when nothing is recorded: they run nothing but the
// controller's own code under the lock, and a cycle's three deferred
// unlocks were measurable beside a channel semaphore's two lock pairs.
func (c *Controller) recordUnlock(op Operation) {
	defer c.mu.Unlock()
	c.rec.Record(op)
}
