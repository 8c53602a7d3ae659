package redisstage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/internal/admit"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/redis/go-redis/v9"
)

// Defaults for Options fields left zero.
const (
	DefaultLeaseTTL  = 10 * time.Second
	DefaultOwnerIdle = time.Hour
)

// Options tune a Store.
type Options struct {
	// LeaseTTL is how long a lease lives without renewal, by the Redis
	// server's clock. A dead replica's capacity returns after at most this.
	LeaseTTL time.Duration
	// Warmup is how long admission stays closed after Redis is found to have
	// lost its dataset (or on first use), so that leases granted before the
	// loss have run out. Zero means LeaseTTL; negative means none, which is
	// safe only with a persistent Redis (appendonly, appendfsync always).
	Warmup time.Duration
	// OwnerIdle expires an owner's generation and history after this long
	// without an Offer or Rotate, bounding keys of calls whose replica died
	// before Forget. Zero means DefaultOwnerIdle; negative means never.
	OwnerIdle time.Duration
	// Wall is the clock that runs beside the Redis server's own time: the
	// "now" of operations that carry none (Release, Renew, Close...), the
	// lease renewals and the backstop poll. It is apart from the
	// dispatcher's Clock on purpose: Redis's TTLs run on real time whatever
	// a test's manual clock says. clock.System when nil.
	Wall clock.Clock
}

func (o Options) withDefaults() Options {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Warmup == 0 {
		o.Warmup = o.LeaseTTL
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.OwnerIdle == 0 {
		o.OwnerIdle = DefaultOwnerIdle
	}
	if o.OwnerIdle < 0 {
		o.OwnerIdle = 0
	}
	o.Wall = clock.Or(o.Wall)
	return o
}

// Store is one stage whose state lives in Redis. It satisfies admit.Store.
// Several Stores (one per replica) with the same name and limits share one
// stage. Safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	name   string
	prefix string
	limits stages.Limits
	opt    Options

	// slots is the slot limit in force as this replica last learnt it
	// (SetSlots, a snapshot, another replica's change): what the scripts
	// fall back to should Redis lose the fleet's limit.
	slots atomic.Int64

	mu     sync.Mutex
	tokens map[string]uint64 // leases taken through Take, for Release
	// owners this replica rotated, at their generation, until Forget: after
	// Redis lost its data they are registered again (reregister).
	owners map[string]uint64
}

var _ admit.Store = (*Store)(nil)

// New returns the stage called name on rdb. It does not contact Redis: use
// Ready to learn whether admission can be decided.
func New(rdb redis.UniversalClient, name string, l stages.Limits, opt Options) (*Store, error) {
	if _, err := admit.New(l); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty stage name", admit.ErrLimits)
	}
	if l.Tombstones == 0 {
		l.Tombstones = admit.DefaultTombstones
	}
	s := &Store{
		rdb:    rdb,
		name:   name,
		prefix: "fd:{" + name + "}:",
		limits: l,
		opt:    opt.withDefaults(),
		tokens: make(map[string]uint64),
		owners: make(map[string]uint64),
	}
	s.slots.Store(int64(l.Slots))
	return s, nil
}

// Limits returns the stage's limits with defaults filled in.
func (s *Store) Limits() stages.Limits { return s.limits }

// Options returns the options with defaults filled in.
func (s *Store) Options() Options { return s.opt }

// Lease is a reservation of one slot.
type Lease struct {
	ID    string
	Token uint64 // fencing token: greater than every token issued before
}

// step is one take inside a pump: Admitted or Expired work.
type step struct {
	disp  stages.Disposition
	id    string
	token uint64
}

type reply struct {
	code     int64
	extra    any
	steps    []step
	deadline time.Time // of the head after the pump; zero when empty
}

func stamp(t time.Time) string { return fmt.Sprintf("%020d", t.UnixNano()) }

func unstamp(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s == "" {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func genString(g uint64) string { return fmt.Sprintf("%020d", g) }

func (s *Store) run(ctx context.Context, sc *redis.Script, pump int, now time.Time, args ...any) (reply, error) {
	argv := make([]any, 0, 9+len(args))
	argv = append(argv, s.prefix, s.opt.LeaseTTL.Milliseconds(), s.limits.Tombstones,
		s.opt.Warmup.Milliseconds(), s.slots.Load(), s.waitingArg(), s.opt.OwnerIdle.Milliseconds(),
		pump, stamp(now))
	argv = append(argv, args...)
	v, err := sc.Run(ctx, s.rdb, nil, argv...).Slice()
	if err != nil {
		return reply{}, fmt.Errorf("%w: stage %s: %w", admit.ErrUnavailable, s.name, err)
	}
	return parse(v)
}

func parse(v []any) (reply, error) {
	var r reply
	if len(v) != 3 {
		return r, fmt.Errorf("%w: malformed script reply %v", admit.ErrUnavailable, v)
	}
	r.code, _ = v[0].(int64)
	r.extra = v[1]
	p, _ := v[2].([]any)
	if len(p) < 2 {
		return r, fmt.Errorf("%w: malformed pump reply %v", admit.ErrUnavailable, v[2])
	}
	n, _ := p[0].(int64)
	for i := 0; i < int(n) && 3+3*i < len(p); i++ {
		d, _ := p[1+3*i].(int64)
		id, _ := p[2+3*i].(string)
		tok, _ := p[3+3*i].(int64)
		r.steps = append(r.steps, step{disp: stages.Disposition(d), id: id, token: uint64(tok)})
	}
	if dl, _ := p[len(p)-1].(string); dl != "" {
		r.deadline = unstamp(dl)
	}
	return r, nil
}

// deadline is the last instant job is eligible (stages.Job.Expires),
// saturated at the largest stamp.
func deadline(job stages.Job, maxAge time.Duration) time.Time {
	if job.Deadline.IsZero() && job.Born.UnixNano() > math.MaxInt64-int64(maxAge) {
		return time.Unix(0, math.MaxInt64)
	}
	return job.Expires(maxAge)
}

func (s *Store) offer(ctx context.Context, job stages.Job, now time.Time, pump int) (stages.Disposition, reply, error) {
	if job.ID == "" || job.Owner == "" || job.Born.IsZero() || job.Born.After(now) || job.Born.UnixNano() < 0 {
		return 0, reply{}, fmt.Errorf("%w: id %q owner %q born %v now %v", admit.ErrJob, job.ID, job.Owner, job.Born, now)
	}
	// The tenant and its share travel with the offer, so that the count and
	// the refusal are one script: the share holds fleet-wide.
	r, err := s.run(ctx, offerScript, pump, now, job.ID, job.Owner, genString(job.Generation),
		stamp(job.Born), stamp(deadline(job, s.limits.MaxAge)), job.Tenant, s.limits.TenantWaiting)
	if err == nil && stages.Disposition(r.code) == stages.Stale && s.reregister(ctx, job, now) {
		// Redis lost the owner's generation, which this replica still
		// knows: registered again, the offer is decided on its merits.
		r, err = s.run(ctx, offerScript, pump, now, job.ID, job.Owner, genString(job.Generation),
			stamp(job.Born), stamp(deadline(job, s.limits.MaxAge)), job.Tenant, s.limits.TenantWaiting)
	}
	if err != nil {
		return stages.Closed, r, err
	}
	if r.code == -1 {
		return 0, r, fmt.Errorf("%w: %q", admit.ErrDuplicate, job.ID)
	}
	return stages.Disposition(r.code), r, nil
}

// Offer asks to queue job at now, as admit.Controller.Offer, including the
// per-tenant share of the queue (Limits.TenantWaiting) counted fleet-wide:
// over it the offer is Overloaded and counted in Ledger.Refused.OverShare.
// When Redis cannot be reached it returns Closed and an error wrapping
// admit.ErrUnavailable.
func (s *Store) Offer(ctx context.Context, job stages.Job, now time.Time) (stages.Disposition, error) {
	d, _, err := s.offer(ctx, job, now, 0)
	return d, err
}

// Take looks at the head of the queue at now, as admit.Controller.Take. The
// lease of admitted work is remembered so that Release can present its
// fencing token; TakeLease returns it to the caller instead.
func (s *Store) Take(ctx context.Context, now time.Time) (stages.Disposition, string, error) {
	d, l, err := s.TakeLease(ctx, now)
	if err == nil && d == stages.Admitted {
		s.mu.Lock()
		s.tokens[l.ID] = l.Token
		s.mu.Unlock()
	}
	return d, l.ID, err
}

// TakeLease is Take returning the lease with its fencing token.
func (s *Store) TakeLease(ctx context.Context, now time.Time) (stages.Disposition, Lease, error) {
	r, err := s.run(ctx, takeScript, 0, now)
	if err != nil {
		return 0, Lease{}, err
	}
	if r.code == -3 {
		id, _ := r.extra.(string)
		return 0, Lease{}, fmt.Errorf("%w: now %v, head %q", admit.ErrClock, now, id)
	}
	var l Lease
	if e, ok := r.extra.([]any); ok && len(e) == 2 {
		l.ID, _ = e[0].(string)
		tok, _ := e[1].(int64)
		l.Token = uint64(tok)
	}
	return stages.Disposition(r.code), l, nil
}

// Release returns id's lease, as admit.Controller.Release. It presents the
// fencing token remembered by Take; for a lease this Store did not take it
// releases by identity alone (an operator's tool). Use ReleaseLease to
// release with a token explicitly.
func (s *Store) Release(ctx context.Context, id string) (stages.Disposition, error) {
	return s.releaseID(ctx, id, false)
}

// ReleaseFailed is Release after the work's backend failed: the ledger
// counts it failed, not completed (admit.Controller.ReleaseFailed).
func (s *Store) ReleaseFailed(ctx context.Context, id string) (stages.Disposition, error) {
	return s.releaseID(ctx, id, true)
}

func (s *Store) releaseID(ctx context.Context, id string, failed bool) (stages.Disposition, error) {
	s.mu.Lock()
	tok := s.tokens[id]
	s.mu.Unlock()
	d, _, err := s.release(ctx, Lease{ID: id, Token: tok}, failed, 0, s.opt.Wall.Now())
	if err == nil || !errors.Is(err, admit.ErrUnavailable) {
		s.mu.Lock()
		delete(s.tokens, id)
		s.mu.Unlock()
	}
	return d, err
}

// ReleaseLease releases l only if l.Token is still the lease's token: a
// holder whose lease ran out gets stages.ErrFenced and changes nothing.
func (s *Store) ReleaseLease(ctx context.Context, l Lease) (stages.Disposition, error) {
	if l.Token == 0 {
		return 0, fmt.Errorf("%w: %q: zero token", stages.ErrFenced, l.ID)
	}
	d, _, err := s.release(ctx, l, false, 0, s.opt.Wall.Now())
	return d, err
}

func (s *Store) release(ctx context.Context, l Lease, failed bool, pump int, now time.Time) (stages.Disposition, reply, error) {
	f := "0"
	if failed {
		f = "1"
	}
	r, err := s.run(ctx, releaseScript, pump, now, l.ID, strconv.FormatUint(l.Token, 10), f)
	switch {
	case err != nil:
		return 0, r, err
	case r.code == -4:
		return 0, r, fmt.Errorf("%w: %q token %d", stages.ErrFenced, l.ID, l.Token)
	case r.code == -5:
		return 0, r, fmt.Errorf("%w: %q", admit.ErrNoLease, l.ID)
	}
	return stages.Disposition(r.code), r, nil
}

// Renew extends l by the lease TTL from now on the server's clock. It
// returns stages.ErrFenced when the lease is gone or has a newer token, and
// reports whether the work was cancelled while active.
func (s *Store) Renew(ctx context.Context, l Lease) (cancelled bool, err error) {
	_, cancelled, err = s.renew(ctx, l, stages.Job{})
	return cancelled, err
}

// renew is Renew for the holder of job's lease: after Redis lost its data
// the lease is granted again, when a slot is free, and renew returns it
// with its new token (renewScript).
func (s *Store) renew(ctx context.Context, l Lease, job stages.Job) (Lease, bool, error) {
	r, err := s.run(ctx, renewScript, 0, s.opt.Wall.Now(), l.ID, strconv.FormatUint(l.Token, 10),
		job.Owner, genString(job.Generation))
	if err != nil {
		return l, false, err
	}
	switch r.code {
	case -4:
		return l, false, fmt.Errorf("%w: %q token %d", stages.ErrFenced, l.ID, l.Token)
	case -7:
		tok, _ := r.extra.(string)
		n, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			return l, false, fmt.Errorf("%w: re-leased %q with token %q", admit.ErrUnavailable, l.ID, tok)
		}
		return Lease{ID: l.ID, Token: n}, false, nil
	}
	return l, stages.Disposition(r.code) == stages.Cancelled, nil
}

func (s *Store) rotate(ctx context.Context, owner string, gen uint64, now time.Time, pump int) (reply, error) {
	if owner == "" {
		return reply{}, fmt.Errorf("%w: empty owner", stages.ErrGeneration)
	}
	r, err := s.run(ctx, rotateScript, pump, now, owner, genString(gen))
	if err != nil {
		return r, err
	}
	if r.code == -6 {
		cur, _ := r.extra.(string)
		return r, fmt.Errorf("%w: owner %q at %s, got %d", stages.ErrGeneration, owner, trimGen(cur), gen)
	}
	s.mu.Lock()
	s.owners[owner] = gen
	s.mu.Unlock()
	return r, nil
}

// reregister registers job's owner at job's generation again when this
// replica set it (Rotate) and Redis has lost it since; it reports whether
// it did. A generation the replica knows to be older is not registered:
// that offer is stale.
func (s *Store) reregister(ctx context.Context, job stages.Job, now time.Time) bool {
	s.mu.Lock()
	gen, ok := s.owners[job.Owner]
	s.mu.Unlock()
	if !ok || gen != job.Generation {
		return false
	}
	r, err := s.run(ctx, registerScript, 0, now, job.Owner, genString(gen))
	return err == nil && r.code == 1
}

func trimGen(s string) string {
	g, _ := strconv.ParseUint(s, 10, 64)
	return strconv.FormatUint(g, 10)
}

// Rotate advances owner to generation fleet-wide, as
// admit.Controller.Rotate: its queued work, wherever it was submitted,
// leaves the queue at once.
func (s *Store) Rotate(ctx context.Context, owner string, generation uint64, now time.Time) error {
	_, err := s.rotate(ctx, owner, generation, now, 0)
	return err
}

// Forget ends owner's conversation fleet-wide, as admit.Controller.Forget.
func (s *Store) Forget(ctx context.Context, owner string, now time.Time) error {
	s.forgetOwner(owner)
	_, err := s.run(ctx, forgetScript, 0, now, owner)
	return err
}

func (s *Store) forgetOwner(owner string) {
	s.mu.Lock()
	delete(s.owners, owner)
	s.mu.Unlock()
}

func (s *Store) cancel(ctx context.Context, id string, now time.Time, pump int) (stages.Disposition, reply, error) {
	r, err := s.run(ctx, cancelScript, pump, now, id)
	if err != nil {
		return 0, r, err
	}
	if r.code == -2 {
		return 0, r, fmt.Errorf("%w: unknown identity %q", admit.ErrJob, id)
	}
	return stages.Disposition(r.code), r, nil
}

// Cancel withdraws one piece of work, as admit.Controller.Cancel.
func (s *Store) Cancel(ctx context.Context, id string, now time.Time) (stages.Disposition, error) {
	d, _, err := s.cancel(ctx, id, now, 0)
	return d, err
}

// Close closes admission fleet-wide.
func (s *Store) Close(ctx context.Context) error {
	_, err := s.run(ctx, closeScript, 0, s.opt.Wall.Now(), "1")
	return err
}

// Reopen opens admission fleet-wide.
func (s *Store) Reopen(ctx context.Context) error {
	_, err := s.run(ctx, closeScript, 0, s.opt.Wall.Now(), "0")
	return err
}

// states reports the state and lease token of each id (0 when unknown).
func (s *Store) states(ctx context.Context, ids ...string) ([]stages.Disposition, []uint64, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	r, err := s.run(ctx, stateScript, 0, s.opt.Wall.Now(), args...)
	if err != nil {
		return nil, nil, err
	}
	v, _ := r.extra.([]any)
	ds := make([]stages.Disposition, len(ids))
	toks := make([]uint64, len(ids))
	for i := range ids {
		if 2*i+1 >= len(v) {
			break
		}
		d, _ := v[2*i].(int64)
		ds[i] = stages.Disposition(d)
		if ts, ok := v[2*i+1].(string); ok {
			toks[i], _ = strconv.ParseUint(ts, 10, 64)
		}
	}
	return ds, toks, nil
}

// State reports id's state, as admit.Controller.State.
func (s *Store) State(ctx context.Context, id string) (stages.Disposition, bool, error) {
	ds, _, err := s.states(ctx, id)
	if err != nil {
		return 0, false, err
	}
	return ds[0], ds[0] != 0, nil
}

// Generation reports owner's current generation.
func (s *Store) Generation(ctx context.Context, owner string) (uint64, bool, error) {
	v, err := s.rdb.HGet(ctx, s.prefix+"own:"+owner, "g").Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("%w: stage %s: %w", admit.ErrUnavailable, s.name, err)
	}
	g, err := strconv.ParseUint(v, 10, 64)
	return g, err == nil, nil
}

// Position reports id's place in the fleet-wide queue, 1 being the head.
func (s *Store) Position(ctx context.Context, id string) (int, bool, error) {
	r, err := s.run(ctx, positionScript, 0, s.opt.Wall.Now(), id)
	if err != nil {
		return 0, false, err
	}
	return int(r.code), r.code > 0, nil
}

// Ready reports nil when Redis answers and admission is open to decisions:
// admit.ErrUnavailable when Redis cannot be reached or is still warming up
// after losing its dataset.
func (s *Store) Ready(ctx context.Context) error {
	r, err := s.run(ctx, readyScript, 0, s.opt.Wall.Now())
	if err != nil {
		return err
	}
	if r.code != 1 {
		return fmt.Errorf("%w: stage %s warming up after Redis lost its data", admit.ErrUnavailable, s.name)
	}
	return nil
}
