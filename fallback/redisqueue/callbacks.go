package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
)

// CallbackStore is the fleet's callback queue on Redis: a
// fallback.CallbackQueue (and so a fallback.CallbackStore) shared by every
// replica. The queue is a Redis stream with a consumer group: a callback
// one replica accepted is listed, claimed and finished through any other
// and outlives the replica (and the operator) that accepted it. The
// fleet's bounds are checked in the script that changes the queue:
// pending callbacks at most Config.CallbackQueue (Accept refuses with
// fallback.ErrQueueFull), claims at most Config.CallbackSlots
// (fallback.ErrSlotsBusy). A claim is an entry in the group's pending list;
// one left idle for Config.CallbackLease (its operator never finished it)
// is taken over with XAUTOCLAIM by Sweep and goes back to its place in the
// queue, and the superseded attempt is fenced. Finish acknowledges (XACK)
// and removes the entry; records are kept after they finish, as the SQLite
// store keeps them.
//
// Durability is Redis's: a change is durable once Redis has it only with
// appendonly yes and appendfsync always (docs/FLEET.md).
type CallbackStore struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    fallback.Config

	// journal holds the live callbacks this replica accepted, so that a
	// store that lost its data (FLUSHALL, a restart without persistence,
	// a failover) gets them back: Sweep puts back each one whose record is
	// gone (records are kept after they finish, so a missing one was
	// lost) and forgets each one that has finished.
	mu          sync.Mutex
	journal     map[string]fallback.Callback // by ticket
	republished atomic.Uint64

	// A tenant's share of the pending callbacks (0: none), counted by
	// Callback.Tenant: set by NewCallbackGate.
	tenantWaiting int

	last *lastView // as last read by Snapshot
}

var _ fallback.CallbackQueue = (*CallbackStore)(nil)

// NewCallbackStore returns the callback queue called name on rdb (one per
// fleet; "callbacks" is the usual name) with the callback limits of cfg,
// which every replica must share. It does not contact Redis.
func NewCallbackStore(rdb redis.UniversalClient, name string, cfg fallback.Config) *CallbackStore {
	return &CallbackStore{rdb: rdb, prefix: "fdcb:{" + name + "}:", cfg: cfg, journal: map[string]fallback.Callback{},
		last: &lastView{limits: cfg.CallbackLimits()}}
}

// Room implements fallback.CallbackQueue: room as Snapshot last read it.
func (s *CallbackStore) Room() bool { return s.last.room() }

// View implements fallback.CallbackQueue: the queue as Snapshot last read
// it, shown closed while it cannot be reached.
func (s *CallbackStore) View() stages.View { return s.last }

// Stop implements fallback.CallbackQueue: the queue's timeouts are the
// sweep's, run by whoever calls Sweep.
func (s *CallbackStore) Stop() {}

// Close does nothing: the client belongs to the caller.
func (s *CallbackStore) Close() error { return nil }

// callKey keeps ("a:b", "c") and ("a", "b:c") apart.
func callKey(call, turn string) string { return strconv.Itoa(len(call)) + ":" + call + ":" + turn }

func (s *CallbackStore) unavailable(op string, err error) error {
	return fmt.Errorf("%w: callbacks %s: %w", ErrUnavailable, op, err)
}

// parseCallback reads a flat HGETALL reply from a script.
func parseCallback(v any) (fallback.Callback, bool) { return fromHash(flat(v)) }

func fromHash(m map[string]string) (fallback.Callback, bool) {
	if m["ticket"] == "" {
		return fallback.Callback{}, false
	}
	attempt, _ := strconv.Atoi(m["attempt"])
	return fallback.Callback{
		Ref: m["ticket"], Call: m["call"], Turn: m["turn"], Number: m["number"],
		Status: fallback.Status(m["status"]), Accepted: unns(m["born"]), Attempt: attempt,
		Operator: m["holder"], LeaseUntil: unns(m["lease"]), Updated: unns(m["updated"]), Note: m["note"], Tenant: m["tenant"],
	}, true
}

// ARGV[1] prefix, [2] ticket, [3] call key, [4] call, [5] turn, [6] number,
// [7] accepted, [8] bound on pending callbacks (0: none), [9] tenant, [10]
// the tenant's share (0: none).
var acceptScript = script(`
local existing = redis.call('GET', P .. 'ct:' .. ARGV[3])
if existing then return {0, redis.call('HGETALL', P .. 't:' .. existing)} end
if overShare(ARGV[2], ARGV[9], tonumber(ARGV[10])) then return {-4, {}} end
local k = P .. 't:' .. ARGV[2]
local lm = ARGV[7] .. ' ' .. ARGV[2]
local r = enqueue(ARGV[2], tonumber(ARGV[8]), {'call', ARGV[4], 'turn', ARGV[5], 'number', ARGV[6],
  'born', ARGV[7], 'lease', '0', 'updated', ARGV[7], 'note', '', 'lm', lm, 'tenant', ARGV[9]})
if r < 0 then return {r, {}} end
redis.call('SET', P .. 'ct:' .. ARGV[3], ARGV[2])
redis.call('ZADD', P .. 'l:pending', 0, lm)
return {1, redis.call('HGETALL', k)}
`)

// Accept implements fallback.CallbackStore: it refuses with an error
// wrapping fallback.ErrQueueFull while the fleet holds Config.CallbackQueue
// pending callbacks.
func (s *CallbackStore) Accept(ctx context.Context, c fallback.Callback) (fallback.Callback, bool, error) {
	if c.Ref == "" || c.Call == "" || c.Turn == "" || c.Accepted.IsZero() {
		return fallback.Callback{}, false, fmt.Errorf("fallback: accept callback: empty ticket, call, turn or time")
	}
	v, err := acceptScript.Run(ctx, s.rdb, nil, s.prefix, c.Ref, callKey(c.Call, c.Turn), c.Call, c.Turn, c.Number,
		ns(c.Accepted), s.cfg.CallbackQueue, c.Tenant, s.tenantWaiting).Slice()
	if err != nil {
		return fallback.Callback{}, false, s.unavailable("accept", err)
	}
	code, _ := v[0].(int64)
	if code == -4 {
		return fallback.Callback{}, false, fmt.Errorf("%w: %d callbacks pending in the fleet", fallback.ErrQueueFull, s.cfg.CallbackQueue)
	}
	if code == -1 {
		return fallback.Callback{}, false, fmt.Errorf("fallback: accept callback: ticket %q exists for another call", c.Ref)
	}
	got, _ := parseCallback(v[1])
	if code == 1 {
		s.remember(c)
	}
	return got, code == 1, nil
}

// remember journals a callback this replica accepted. The journal holds
// at most the fleet's queue bound: past it the oldest entry is dropped
// (its record is then as durable as Redis makes it, no more).
func (s *CallbackStore) remember(c fallback.Callback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max := s.cfg.CallbackQueue; max > 0 && len(s.journal) >= max {
		var oldest string
		for ref, j := range s.journal {
			if oldest == "" || j.Accepted.Before(s.journal[oldest].Accepted) {
				oldest = ref
			}
		}
		delete(s.journal, oldest)
	}
	s.journal[c.Ref] = c
}

// Republished returns how many callbacks this replica has put back after
// the store lost them.
func (s *CallbackStore) Republished() uint64 { return s.republished.Load() }

// restoreJournal checks every journaled callback's record: a finished one
// leaves the journal, a missing one (lost with the store's data) is
// accepted again under its ticket, pending as when it was first accepted.
func (s *CallbackStore) restoreJournal(ctx context.Context) error {
	s.mu.Lock()
	refs := make([]fallback.Callback, 0, len(s.journal))
	for _, c := range s.journal {
		refs = append(refs, c)
	}
	s.mu.Unlock()
	if len(refs) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(refs))
	for i, c := range refs {
		cmds[i] = pipe.HGet(ctx, s.prefix+"t:"+c.Ref, "status")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return s.unavailable("journal", err)
	}
	for i, c := range refs {
		st, err := cmds[i].Result()
		switch {
		case errors.Is(err, redis.Nil):
			if _, _, err := s.Accept(ctx, c); err != nil {
				return fmt.Errorf("callbacks: put back %s: %w", c.Ref, err)
			}
			s.republished.Add(1)
		case err != nil:
			return s.unavailable("journal", err)
		case !fallback.Status(st).Live():
			s.mu.Lock()
			delete(s.journal, c.Ref)
			s.mu.Unlock()
		}
	}
	return nil
}

// Find implements fallback.CallbackStore.
func (s *CallbackStore) Find(ctx context.Context, call, turn string) (fallback.Callback, bool, error) {
	ref, err := s.rdb.Get(ctx, s.prefix+"ct:"+callKey(call, turn)).Result()
	if errors.Is(err, redis.Nil) {
		return fallback.Callback{}, false, nil
	}
	if err != nil {
		return fallback.Callback{}, false, s.unavailable("find", err)
	}
	c, err := s.Get(ctx, ref)
	if errors.Is(err, fallback.ErrNotFound) {
		return fallback.Callback{}, false, nil
	}
	return c, err == nil, err
}

// Get implements fallback.CallbackStore.
func (s *CallbackStore) Get(ctx context.Context, ref string) (fallback.Callback, error) {
	m, err := s.rdb.HGetAll(ctx, s.prefix+"t:"+ref).Result()
	if err != nil {
		return fallback.Callback{}, s.unavailable("get", err)
	}
	c, ok := fromHash(m)
	if !ok {
		return fallback.Callback{}, fmt.Errorf("%w: %q", fallback.ErrNotFound, ref)
	}
	return c, nil
}

// Each status is a sorted set of "accepted ticket" members with score 0, so
// that members sort by acceptance time exactly (lexicographically).
// ARGV[1] prefix, [2] limit (0: none), [3...] statuses.
var listScript = redis.NewScript(`
local P = ARGV[1]
local limit = tonumber(ARGV[2])
local members = {}
for i = 3, #ARGV do
  local stop = -1
  if limit > 0 then stop = limit - 1 end
  for _, m in ipairs(redis.call('ZRANGE', P .. 'l:' .. ARGV[i], 0, stop)) do
    members[#members + 1] = m
  end
end
table.sort(members)
local out = {}
for i, m in ipairs(members) do
  if limit > 0 and i > limit then break end
  local ticket = string.sub(m, 22)
  out[#out + 1] = redis.call('HGETALL', P .. 't:' .. ticket)
end
return out
`)

var allStatuses = []fallback.Status{fallback.StatusPending, fallback.StatusClaimed, fallback.StatusCompleted, fallback.StatusFailed, fallback.StatusExpired}

// List implements fallback.CallbackStore: one script, so the list is one
// consistent view.
func (s *CallbackStore) List(ctx context.Context, limit int, statuses ...fallback.Status) ([]fallback.Callback, error) {
	if len(statuses) == 0 {
		statuses = allStatuses
	}
	if limit < 0 {
		limit = 0
	}
	args := []any{s.prefix, limit}
	for _, st := range statuses {
		args = append(args, string(st))
	}
	v, err := listScript.Run(ctx, s.rdb, nil, args...).Slice()
	if err != nil {
		return nil, s.unavailable("list", err)
	}
	var out []fallback.Callback
	for _, x := range v {
		if c, ok := parseCallback(x); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// One transition of a callback. ARGV[1] prefix, [2] op, [3] ticket, [4]
// attempt that must be current (0: any), [5] now, [6] target status, [7]
// note or operator, [8] lease until, [9] claim slots. It returns a code
// (1 done, -1 no such ticket, -2 not in the state op needs, -3 attempt
// superseded, -5 every claim slot busy, -6 nothing waiting, -7 not the
// head) and the record. Nothing waiting is told before busy slots, as by
// the in-process queue. head claims t only when it is the head.
var transitionScript = script(`
local op, t, want, now = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
if op == 'next' then
  local head = redis.call('ZRANGE', Q, 0, 0)
  if #head == 0 then return {-6, {}} end
  if redis.call('SCARD', H) >= tonumber(ARGV[9]) then return {-5, {}} end
  t = string.sub(head[1], 29)
end
local k = P .. 't:' .. t
local st = redis.call('HGET', k, 'status')
if not st then return {-1, {}} end
if op == 'head' and st == 'pending' and redis.call('ZRANGE', Q, 0, 0)[1] ~= redis.call('HGET', k, 'qm') then
  return {-7, redis.call('HGETALL', k)}
end
if op == 'claim' or op == 'next' or op == 'head' then
  if st ~= 'pending' then return {-2, redis.call('HGETALL', k)} end
  if redis.call('SCARD', H) >= tonumber(ARGV[9]) then return {-5, redis.call('HGETALL', k)} end
  take(t, ARGV[7])
  redis.call('HSET', k, 'lease', ARGV[8], 'updated', now)
  return {1, redis.call('HGETALL', k)}
end
if op == 'expire' then
  if st ~= 'pending' then return {-2, redis.call('HGETALL', k)} end
  finish(t, 'expired', 'expired', '', 0)
  redis.call('HSET', k, 'updated', now)
  return {1, redis.call('HGETALL', k)}
end
if st ~= 'claimed' then return {-2, redis.call('HGETALL', k)} end
if want > 0 and tonumber(redis.call('HGET', k, 'attempt')) ~= want then return {-3, redis.call('HGETALL', k)} end
if op == 'return' then
  requeue(t, 'released_cancelled')
  redis.call('HSET', k, 'lease', '0', 'updated', now)
else
  finish(t, ARGV[6], '', (ARGV[6] == 'failed') and 'failed' or 'completed', 0)
  redis.call('HSET', k, 'note', ARGV[7], 'lease', '0', 'updated', now)
end
return {1, redis.call('HGETALL', k)}
`)

func (s *CallbackStore) transition(ctx context.Context, op, ref string, attempt int, now time.Time, to fallback.Status, text string, until time.Time) (fallback.Callback, error) {
	v, err := transitionScript.Run(ctx, s.rdb, nil, s.prefix, op, ref, attempt, ns(now), string(to), text, ns(until), s.cfg.CallbackSlots).Slice()
	if err != nil {
		return fallback.Callback{}, s.unavailable(op, err)
	}
	cur, _ := parseCallback(v[1])
	switch code, _ := v[0].(int64); code {
	case -1:
		return fallback.Callback{}, fmt.Errorf("%w: %q", fallback.ErrNotFound, ref)
	case -2:
		if op == "return" || op == "finish" {
			return fallback.Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", fallback.ErrLeaseLost, op, ref, cur.Status, cur.Attempt)
		}
		return fallback.Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", fallback.ErrNotLive, op, ref, cur.Status, cur.Attempt)
	case -3:
		return fallback.Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", fallback.ErrLeaseLost, op, ref, cur.Status, cur.Attempt)
	case -5:
		return fallback.Callback{}, fmt.Errorf("%w: %d claims held in the fleet", fallback.ErrSlotsBusy, s.cfg.CallbackSlots)
	case -6:
		return fallback.Callback{}, fallback.ErrNoneWaiting
	case -7:
		return fallback.Callback{}, fmt.Errorf("%w: %q", fallback.ErrNotNext, ref)
	}
	return cur, nil
}

// Claim implements fallback.CallbackStore: it claims ref wherever it
// waits, within the fleet's claim slots.
func (s *CallbackStore) Claim(ctx context.Context, ref, operator string, now, until time.Time) (fallback.Callback, error) {
	return s.transition(ctx, "claim", ref, 0, now, "", operator, until)
}

// Next implements fallback.CallbackQueue: the oldest waiting callback, in
// the order the fleet accepted them (a returned claim keeps its place), or
// ref when it is the oldest.
func (s *CallbackStore) Next(ctx context.Context, operator, ref string, now time.Time) (fallback.Callback, error) {
	if err := s.Sweep(ctx, now); err != nil {
		return fallback.Callback{}, err
	}
	op := "next"
	if ref != "" {
		op = "head"
	}
	return s.transition(ctx, op, ref, 0, now, "", operator, now.Add(s.cfg.CallbackLease))
}

// Refuse implements fallback.CallbackQueue.
func (s *CallbackStore) Refuse(ctx context.Context, d stages.Disposition) error {
	return refuse(ctx, s.rdb, s.prefix, refusalField(d))
}

// Return implements fallback.CallbackStore.
func (s *CallbackStore) Return(ctx context.Context, ref string, attempt int, now time.Time) error {
	_, err := s.transition(ctx, "return", ref, attempt, now, "", "", time.Time{})
	return err
}

// Finish implements fallback.CallbackStore.
func (s *CallbackStore) Finish(ctx context.Context, ref string, attempt int, to fallback.Status, note string, now time.Time) (fallback.Callback, error) {
	if to != fallback.StatusCompleted && to != fallback.StatusFailed {
		return fallback.Callback{}, fmt.Errorf("fallback: finish %q: bad status %q", ref, to)
	}
	c, err := s.transition(ctx, "finish", ref, attempt, now, to, note, time.Time{})
	if err == nil {
		s.forget(ref)
	}
	return c, err
}

// forget drops a finished callback from the journal. One finished by
// another replica leaves this one's journal at its next Sweep.
func (s *CallbackStore) forget(ref string) {
	s.mu.Lock()
	delete(s.journal, ref)
	s.mu.Unlock()
}

// Expire implements fallback.CallbackStore.
func (s *CallbackStore) Expire(ctx context.Context, ref string, now time.Time) error {
	_, err := s.transition(ctx, "expire", ref, 0, now, "", "", time.Time{})
	return err
}

// ARGV[1] prefix, [2] claim idle ms, [3] cutoff, [4] now.
var sweepScript = script(`
local out = sweep(tonumber(ARGV[2]), ARGV[3], 'expired', 0)
for _, t in ipairs(out) do redis.call('HSET', P .. 't:' .. t, 'updated', ARGV[4]) end
return out
`)

// Sweep implements fallback.CallbackQueue: claims idle for
// Config.CallbackLease go back to their place (XAUTOCLAIM), and pending
// callbacks accepted more than Config.CallbackMaxWait before now expire.
func (s *CallbackStore) Sweep(ctx context.Context, now time.Time) error {
	cutoff := now.Add(-s.cfg.CallbackMaxWait)
	if s.cfg.CallbackMaxWait <= 0 {
		cutoff = time.Time{}
	}
	if err := s.restoreJournal(ctx); err != nil {
		return err
	}
	if err := sweepScript.Run(ctx, s.rdb, nil, s.prefix, s.cfg.CallbackLease.Milliseconds(), ns(cutoff), ns(now)).Err(); err != nil {
		return s.unavailable("sweep", err)
	}
	return nil
}

// Snapshot implements fallback.CallbackQueue.
func (s *CallbackStore) Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	sn, err := snapshot(ctx, s.rdb, s.prefix, s.cfg.CallbackLimits(), now)
	if err != nil {
		err = s.unavailable("snapshot", err)
	}
	s.last.keep(sn, err)
	return sn, err
}
