package admit

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultTombstones is the number of terminal records a Controller retains
// when Limits.Tombstones is zero.
const DefaultTombstones = 16384

// Errors returned by Controller operations. They report misuse, never an
// admission outcome: every outcome is a Disposition.
var (
	ErrLimits     = errors.New("stages: invalid limits")
	ErrJob        = errors.New("stages: invalid job")
	ErrDuplicate  = errors.New("stages: job identity still retained")
	ErrGeneration = errors.New("stages: generation must advance")
	ErrNoLease    = errors.New("stages: no lease held")
	ErrClock      = errors.New("stages: time before the head's creation")
)

// Limits bound a stage.
type Limits struct {
	Slots      int           `json:"slots"`      // work holding a lease at once; >= 1
	Waiting    int           `json:"waiting"`    // work waiting for a lease; >= 1
	MaxAge     time.Duration `json:"max_age_ns"` // oldest age still eligible (equal is eligible); >= 0
	Tombstones int           `json:"tombstones"` // terminal records retained; 0 means DefaultTombstones
	// TenantWaiting caps the waiting work of any one tenant (Job.Tenant), so
	// that one tenant's burst cannot take every waiting position; over its
	// share a tenant's offer is Overloaded. 0 means no per-tenant cap.
	TenantWaiting int `json:"tenant_waiting,omitempty"`
	// Order is the order in which waiting work takes a freed slot: FIFO,
	// or Fair between tenants (fair.go).
	Order Order `json:"order,omitempty"`
}

// Validate reports an error wrapping ErrLimits when l cannot bound a stage,
// so that a server can refuse its configuration before it builds a gate.
func (l Limits) Validate() error {
	if l.Slots < 1 || l.Waiting < 1 || l.MaxAge < 0 || l.Tombstones < 0 || l.TenantWaiting < 0 || l.Order > Fair {
		return fmt.Errorf("%w: %+v (need Slots >= 1, Waiting >= 1, MaxAge >= 0, Tombstones >= 0, TenantWaiting >= 0, Order fifo or fair)", ErrLimits, l)
	}
	return nil
}

// Job is one unit of work offered to a stage. Born is when the caller's
// waiting began; it is carried unchanged from stage to stage.
type Job struct {
	ID         string
	Owner      string
	Generation uint64
	Born       time.Time
	Tenant     string // optional: whose share of the queue the work uses
	// Deadline, when not zero, is the last instant the work is still worth
	// starting, in place of Born + MaxAge: work whose usefulness is set by
	// something other than the caller's wait (the next sentence of a reply
	// the caller is already hearing is useful until the audio before it
	// runs out). The stage's MaxAge then does not apply to it.
	Deadline time.Time
}

// expires is the last instant j is eligible in a stage whose MaxAge is
// maxAge (equal is eligible).
func (j Job) expires(maxAge time.Duration) time.Time {
	if !j.Deadline.IsZero() {
		return j.Deadline
	}
	return j.Born.Add(maxAge)
}

// Expires is the last instant j is still eligible in a stage whose
// MaxAge is maxAge: its Deadline, or Born + maxAge. Stores that keep the
// deadline themselves (package redisstage) use it.
func (j Job) Expires(maxAge time.Duration) time.Time { return j.expires(maxAge) }

// record is a queued or leased piece of work. Records live in a slab sized
// Slots+Waiting, so queueing and admitting work costs no allocation and the
// queue refers to records by index without hashing identities. The
// identity itself is retained, from Offer until its tombstone is evicted, in
// the Controller's identities (see identities).
//
// The fields a cycle reads come first and the small ones share a word, so
// that a record is 128 bytes, two cache lines for finish to clear, not 144.
type record struct {
	id        string
	ent       int32       // the identity's entry in Controller.ids
	state     Disposition // Queued, Active or Cancelled (cancelled while active)
	returned  bool        // ReleaseOnCancel gave the lease back at cancel
	overtaken bool        // Fair order gave a slot to another tenant's later work
	born      time.Time
	expires   time.Time // born + MaxAge, or the job's Deadline: eligible until, and at, this instant
	own       *owner    // also names the owner, for Waiting
	gen       uint64
	tenant    string
	cancelled time.Time // when an active record was cancelled
}

type owner struct {
	id       string
	gen      uint64
	lastBorn time.Time
	hasLast  bool
	live     []int32 // queued and leased records, usually one or two
}

// Controller is a bounded admission controller for one stage. The zero value
// is not usable; call New.
type Controller struct {
	mu     sync.Mutex
	limits Limits // as configured
	eff    Limits // as the policy enforces them
	policy Policy
	closed bool
	queue  ring[int32]
	recs   []record
	free   []int32
	ids    identities // every retained identity, live or tombstone
	owners map[string]*owner
	// hot is the owner of the latest offer (nil if unknown): a call offers
	// its turns to a stage one after another, so Offer compares one string
	// where it would hash the owner into the map.
	hot *owner
	// taken is the record Take admitted last: Release looks there first,
	// and rehashes the identity only when the work released is not the
	// work admitted last (always it, in a stage of one slot).
	taken   int32
	leased  int
	cleanup int
	ledger  Ledger
	tenants map[string]int // waiting work per tenant, only while nonzero
	fair    fairness       // the tenants' turns, under Fair order
	rec     Recorder       // nil unless WithRecorder: then every operation is recorded
	// last is the latest time a caller gave: the time at which Release,
	// Close and Reopen, which judge no time and take none, are recorded.
	last time.Time
}

// Option configures a Controller.
type Option func(*Controller)

// New returns an open Controller with the given limits.
func New(l Limits, opts ...Option) (*Controller, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Tombstones == 0 {
		l.Tombstones = DefaultTombstones
	}
	c := &Controller{
		limits:  l,
		queue:   newRing[int32](l.Waiting),
		recs:    make([]record, l.Slots+l.Waiting),
		free:    make([]int32, 0, l.Slots+l.Waiting),
		ids:     newIdentities(l.Slots+l.Waiting, l.Tombstones),
		tenants: make(map[string]int),
		owners:  make(map[string]*owner),
		fair:    newFairness(),
	}
	for i := len(c.recs) - 1; i >= 0; i-- {
		c.free = append(c.free, int32(i))
	}
	for _, o := range opts {
		o(c)
	}
	c.eff = c.policy.effective(l)
	return c, nil
}

// Limits returns the controller's limits, with defaults filled in.
func (c *Controller) Limits() Limits { return c.limits }

// Rotate advances owner to generation, which must be greater than the
// owner's current one (any generation starts an unknown owner). The owner's
// queued work is cancelled and leaves the queue at once; its active work is
// cancelled but keeps its lease until Release. The owner's ordering history
// starts afresh. now stamps the cancellations, so that the age of pending
// cleanup is measured in the caller's clock domain.
func (c *Controller) Rotate(owner string, generation uint64, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rotate(owner, generation, now, nil)
}

// rotate runs under c.mu. cancelled, when set, learns each queued identity
// that left the queue and each active one that lost its right to speak.
func (c *Controller) rotate(id string, gen uint64, now time.Time, cancelled func(id string, queued bool)) error {
	c.saw(now)
	err := c.rotateOwner(id, gen, now, cancelled)
	if c.rec != nil {
		c.record(Operation{Op: OpRotate, At: now, Owner: id, Generation: gen, Err: err})
	}
	return err
}

func (c *Controller) rotateOwner(id string, gen uint64, now time.Time, cancelled func(id string, queued bool)) error {
	if id == "" {
		return fmt.Errorf("%w: empty owner", ErrGeneration)
	}
	o := c.owners[id]
	if o == nil {
		o = &owner{id: id, gen: gen}
		c.owners[id] = o
		return nil
	}
	if gen <= o.gen {
		return fmt.Errorf("%w: owner %q at %d, got %d", ErrGeneration, id, o.gen, gen)
	}
	o.gen, o.hasLast, o.lastBorn = gen, false, time.Time{}
	c.cancelOwned(o, now, cancelled)
	return nil
}

func (c *Controller) cancelOwned(o *owner, now time.Time, cancelled func(string, bool)) {
	removedQueued := false
	for i := 0; i < len(o.live); {
		ref := o.live[i]
		r := &c.recs[ref]
		switch r.state {
		case Queued:
			id := r.id
			c.unqueue(r)
			c.finish(ref, Cancelled) // removes ref from o.live
			c.ledger.CancelledQueued++
			removedQueued = true
			if cancelled != nil {
				cancelled(id, true)
			}
			continue
		case Active:
			c.cancelActive(r, now)
			if cancelled != nil {
				cancelled(r.id, false)
			}
		}
		i++
	}
	if removedQueued {
		c.queue.filter(func(ref int32) bool { return c.recs[ref].state == Queued })
	}
}

// Forget ends owner's conversation: like Rotate, then the owner's generation
// and ordering history are dropped, so any later work for it is stale.
// Leases held by its cancelled work stay held until Release.
func (c *Controller) Forget(owner string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(owner, now, nil)
}

func (c *Controller) forget(id string, now time.Time, cancelled func(string, bool)) {
	c.saw(now)
	if o := c.owners[id]; o != nil {
		c.cancelOwned(o, now, cancelled)
		delete(c.owners, id)
		if c.hot == o {
			c.hot = nil
		}
	}
	if c.rec != nil {
		c.record(Operation{Op: OpForget, At: now, Owner: id})
	}
}

// Offer asks to queue job at time now. It returns an error, and retains
// nothing, for an invalid job: an empty ID or Owner, a zero Born, a Born
// after now, or an ID whose record is still retained. Otherwise the checks
// run in this order: Stale (owner unknown or generation not current),
// OutOfOrder (Born before the newest Born accepted for the owner in this
// generation; equal is accepted), Expired (older than MaxAge; equal is
// eligible), Closed, Overloaded (queue full); else Queued. Refused work is
// not retained.
func (c *Controller) Offer(job Job, now time.Time) (Disposition, error) {
	if job.ID == "" || job.Owner == "" || job.Born.IsZero() || job.Born.After(now) {
		return 0, fmt.Errorf("%w: id %q owner %q born %v now %v", ErrJob, job.ID, job.Owner, job.Born, now)
	}
	c.mu.Lock()
	d, err := c.offer(&job, now)
	if c.rec != nil {
		c.recordUnlock(Operation{Op: OpOffer, At: now, ID: job.ID, Owner: job.Owner, Generation: job.Generation,
			Born: job.Born, Deadline: job.Deadline, Tenant: job.Tenant, Disposition: d, Err: err})
		return d, err
	}
	c.mu.Unlock()
	return d, err
}

func (c *Controller) offer(job *Job, now time.Time) (Disposition, error) {
	c.saw(now)
	h, at, dup := c.ids.find(job.ID) // queued, leased or a tombstone
	if dup {
		return 0, fmt.Errorf("%w: %q", ErrDuplicate, job.ID)
	}
	c.ledger.Offered++
	o := c.hot
	if o == nil || o.id != job.Owner {
		o = c.owners[job.Owner]
		c.hot = o
	}
	// Adding MaxAge once here is cheaper than subtracting Born at each look
	// (Time.Sub checks its own overflow with another Add), and gives the
	// same answer: age > MaxAge exactly when expires is before now.
	expires := job.expires(c.eff.MaxAge)
	// The checks, in their documented order, inline: as a function of
	// their own they were a call with nine words of arguments per offer.
	d := Queued
	switch {
	case o == nil || o.gen != job.Generation:
		d = Stale
	case o.hasLast && job.Born.Before(o.lastBorn):
		d = OutOfOrder
	case expires.Before(now):
		d = Expired
	case c.closed:
		d = Closed
	case c.queue.len() >= c.eff.Waiting:
		d = Overloaded
	case job.Tenant != "" && c.limits.TenantWaiting > 0 && c.tenants[job.Tenant] >= c.limits.TenantWaiting:
		c.ledger.Refused.OverShare++
		d = Overloaded
	}
	if d != Queued {
		c.ledger.Refused.add(d)
		return d, nil
	}
	o.lastBorn, o.hasLast = job.Born, true
	if len(c.free) == 0 { // only the unbounded baselines outgrow the slab
		c.recs = append(c.recs, record{})
		c.free = append(c.free, int32(len(c.recs)-1))
	}
	ref := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	// The free record is zero (finish clears it): set only what Offer knows,
	// field by field, rather than copying a whole record literal.
	r := &c.recs[ref]
	r.id, r.ent, r.tenant, r.own = job.ID, c.ids.add(job.ID, h, at, ref), job.Tenant, o
	r.gen, r.born, r.expires, r.state = job.Generation, job.Born, expires, Queued
	o.live = append(o.live, ref)
	c.queue.push(ref)
	if job.Tenant != "" {
		c.tenants[job.Tenant]++
	} else {
		c.fair.untenanted++
	}
	c.ledger.Queued++
	return Queued, nil
}

// Take looks at the head of the queue at time now. An expired head is
// removed and returned as (Expired, id), even while every slot is busy.
// Otherwise it returns Busy when no slot is free, Empty (Closed once closed)
// when nothing waits, or (Admitted, id) with a lease reserved for id.
func (c *Controller) Take(now time.Time) (Disposition, string, error) {
	c.mu.Lock()
	d, id, err := c.take(now)
	if c.rec != nil {
		c.recordUnlock(Operation{Op: OpTake, At: now, ID: id, Disposition: d, Err: err})
		return d, id, err
	}
	c.mu.Unlock()
	return d, id, err
}

func (c *Controller) take(now time.Time) (Disposition, string, error) {
	c.saw(now)
	ref, ok := c.queue.peek()
	if !ok {
		if c.closed {
			return Closed, "", nil
		}
		return Empty, "", nil
	}
	r := &c.recs[ref]
	if now.Before(r.born) {
		return 0, "", fmt.Errorf("%w: now %v, %q born %v", ErrClock, now, r.id, r.born)
	}
	if r.expires.Before(now) {
		id := r.id
		c.queue.pop()
		c.unqueue(r)
		c.expired(r)
		c.finish(ref, Expired)
		return Expired, id, nil
	}
	if c.leased >= c.eff.Slots {
		return Busy, "", nil
	}
	if c.limits.Order == Fair && c.contended() {
		return c.takeFair(now)
	}
	if c.limits.Order == Fair {
		c.fair.served(r.tenant) // before unqueue, which forgets a tenant left with nothing waiting
	}
	c.queue.pop()
	c.unqueue(r)
	r.state = Active
	c.taken = ref
	c.leased++
	c.ledger.Admitted++
	return Admitted, r.id, nil
}

// Release returns the lease held by id. It is the evidence that the work
// stopped using the stage's resource, so it never turns cancelled work into
// completed work: it returns Cancelled for work cancelled while active and
// Completed otherwise. Releasing an identity without a lease is an error.
func (c *Controller) Release(id string) (Disposition, error) {
	return c.releaseAt(id, false, time.Time{})
}

// ReleaseFailed returns the lease held by id after its backend failed: it
// is Release, counted Failed instead of Completed (Ledger.Failed), so that
// the stage's ledger never shows a failure as a success. Work cancelled
// while active is still Cancelled: its backend's error is the cancel's.
func (c *Controller) ReleaseFailed(id string) (Disposition, error) {
	return c.releaseAt(id, true, time.Time{})
}

// releaseAt releases id; now, when not zero, is the caller's time (a
// Dispatcher's), recorded with the release.
func (c *Controller) releaseAt(id string, failed bool, now time.Time) (Disposition, error) {
	c.mu.Lock()
	c.saw(now)
	d, err := c.release(id, failed)
	if c.rec != nil {
		c.recordUnlock(Operation{Op: OpRelease, At: c.last, ID: id, Disposition: d, Err: err})
		return d, err
	}
	c.mu.Unlock()
	return d, err
}

func (c *Controller) release(id string, failed bool) (Disposition, error) {
	// Live identities are unique and a free record's state is zero, so a
	// record holding id with a lease is id's record.
	ref := c.taken
	r := &c.recs[ref]
	if r.id != id || r.state != Active && r.state != Cancelled {
		e, ok := c.ids.lookup(id)
		if !ok || e.rec < 0 || c.recs[e.rec].state == Queued {
			return 0, fmt.Errorf("%w: %q", ErrNoLease, id)
		}
		ref = e.rec
		r = &c.recs[ref]
	}
	if r.returned { // ReleaseOnCancel counted this release at the cancel
		c.finish(ref, Cancelled)
		return Cancelled, nil
	}
	c.leased--
	d := Completed
	switch {
	case r.state == Cancelled:
		d = Cancelled
		c.cleanup--
		c.ledger.ReleasedCancelled++
	case failed:
		d = Failed
		c.ledger.Failed++
	default:
		c.ledger.Completed++
	}
	c.finish(ref, d)
	return d, nil
}

// unqueue gives back the tenant's share held by a record leaving the queue.
func (c *Controller) unqueue(r *record) {
	if r.tenant == "" {
		if c.fair.untenanted--; c.fair.untenanted == 0 {
			c.fair.left("")
		}
		return
	}
	if n := c.tenants[r.tenant] - 1; n > 0 {
		c.tenants[r.tenant] = n
	} else {
		delete(c.tenants, r.tenant)
		c.fair.left(r.tenant)
	}
}

// finish makes a record's identity a tombstone and frees its slab entry.
func (c *Controller) finish(ref int32, d Disposition) {
	r := &c.recs[ref]
	c.ids.retire(r.ent, d)
	o := r.own
	if n := len(o.live) - 1; o.live[n] == ref { // the latest, and usually the only, live record
		o.live = o.live[:n]
	} else {
		o.removeLive(ref)
	}
	*r = record{}
	c.free = append(c.free, ref)
}

func (o *owner) removeLive(ref int32) {
	for i, v := range o.live {
		if v == ref {
			last := len(o.live) - 1
			copy(o.live[i:], o.live[i+1:]) // keep arrival order for cancellation callbacks
			o.live = o.live[:last]
			return
		}
	}
}

// Close closes admission: offers are refused as Closed and Take reports
// Closed once the queue is empty. Queued work may still be taken and held
// leases stay releasable.
func (c *Controller) Close() { c.setClosed(true, time.Time{}) }

// Reopen opens admission again after Close.
func (c *Controller) Reopen() { c.setClosed(false, time.Time{}) }

// setClosed closes or reopens admission at now (zero: the latest time given).
func (c *Controller) setClosed(closed bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saw(now)
	c.closed = closed
	if c.rec != nil {
		op := OpReopen
		if closed {
			op = OpClose
		}
		c.record(Operation{Op: op, At: c.last})
	}
}

// saw keeps the latest time a caller gave, for the recorder (c.last is read
// only to record an operation); it runs under c.mu.
func (c *Controller) saw(now time.Time) {
	if c.rec != nil && now.After(c.last) {
		c.last = now
	}
}

// State reports the state of id: Queued, Active, Cancelled (also while its
// lease awaits cleanup), Expired or Completed. It reports false for an
// identity never seen or whose tombstone was evicted.
func (c *Controller) State(id string) (Disposition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ids.lookup(id)
	switch {
	case !ok:
		return 0, false
	case e.rec < 0:
		return e.d, true
	}
	return c.recs[e.rec].state, true
}

// Generation reports owner's current generation.
func (c *Controller) Generation(owner string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.owners[owner]; o != nil {
		return o.gen, true
	}
	return 0, false
}

// Cancel withdraws one piece of work without advancing its owner's
// generation: queued work leaves the queue (Cancelled); active work is marked
// cancelled and keeps its lease until Release. It returns the work's state
// afterwards; work already terminal is left as it is.
func (c *Controller) Cancel(id string, now time.Time) (Disposition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.cancel(id, now)
	if c.rec != nil {
		c.record(Operation{Op: OpCancel, At: now, ID: id, Disposition: d, Err: err})
	}
	return d, err
}

func (c *Controller) cancel(id string, now time.Time) (Disposition, error) {
	c.saw(now)
	e, ok := c.ids.lookup(id)
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: unknown identity %q", ErrJob, id)
	case e.rec < 0:
		return e.d, nil
	}
	ref := e.rec
	r := &c.recs[ref]
	switch r.state {
	case Queued:
		c.unqueue(r)
		c.finish(ref, Cancelled)
		c.ledger.CancelledQueued++
		c.queue.filter(func(v int32) bool { return v != ref })
	case Active:
		c.cancelActive(r, now)
	}
	return Cancelled, nil
}

// cancelActive takes a leased record's right to speak. Its lease stays held,
// as cleanup pending, until Release: the cancel request is not evidence that
// the backend stopped. Only the ReleaseOnCancel baseline returns it now.
func (c *Controller) cancelActive(r *record, now time.Time) {
	r.state, r.cancelled = Cancelled, now
	c.ledger.CancelledActive++
	if c.policy == ReleaseOnCancel {
		r.returned = true
		c.leased--
		c.ledger.ReleasedCancelled++
		return
	}
	c.cleanup++
}

// head reports the last eligible instant of the work at the head of the
// queue (its Born + MaxAge, or its Deadline).
func (c *Controller) head() (time.Time, bool) {
	ref, ok := c.queue.peek()
	if !ok {
		return time.Time{}, false
	}
	return c.recs[ref].expires, true
}
