package redisqueue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/stages"
)

// HandoffQueue is the fleet's handoff queue on Redis, a
// fallback.HandoffQueue: the waiting callers of every replica in one
// stream, in the order they asked, claimed by agents connected to any
// replica through one consumer group. Waiting handoffs are bounded by
// Config.HandoffQueue and claims by Config.HandoffSlots, each checked in
// the script that changes them.
//
// Each live handoff has two owners in different processes, and each
// renews its part (Keep): the caller's replica renews the caller (a
// deadline in a sorted set, on the Redis clock), the agent's replica
// renews the claim (XCLAIM to itself, which resets the entry's idle time).
// Sweep cancels the handoffs of callers not renewed within the TTL (their
// replica died, so did their call) and takes claims idle for the TTL back
// with XAUTOCLAIM, to their place in the queue (the agent's replica died;
// its attempt is fenced). Every change is published on one channel, so
// every replica's agents see the list change within a round trip.
type HandoffQueue struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    fallback.Config
	ttl    time.Duration
	// tenantWaiting is a tenant's share of the waiting handoffs (0: no
	// share), set by NewHandoffGate from stages.Limits.TenantWaiting.
	tenantWaiting int

	last *lastView // as last read by Snapshot
}

var _ fallback.HandoffQueue = (*HandoffQueue)(nil)

// doneKeep is how long a resolved handoff's record stays readable, so that
// the caller's replica learns its outcome even after missing the event.
const doneKeep = 10 * time.Minute

// NewHandoffQueue returns the handoff queue called name on rdb ("handoffs"
// is the usual name) with the handoff limits of cfg, which every replica
// must share. ttl is how long a caller or a claim lives without renewal.
// It does not contact Redis.
func NewHandoffQueue(rdb redis.UniversalClient, name string, cfg fallback.Config, ttl time.Duration) *HandoffQueue {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &HandoffQueue{rdb: rdb, prefix: "fdho:{" + name + "}:", cfg: cfg, ttl: ttl, last: &lastView{limits: cfg.HandoffLimits()}}
}

// Room implements fallback.HandoffQueue: room as Snapshot last read it.
func (q *HandoffQueue) Room() bool { return q.last.room() }

// View implements fallback.HandoffQueue: the queue as Snapshot last read
// it, shown closed while it cannot be reached.
func (q *HandoffQueue) View() stages.View { return q.last }

// Stop implements fallback.HandoffQueue: the queue's timeouts are the
// sweep's, run by whoever calls Sweep.
func (q *HandoffQueue) Stop() {}

// TTL implements fallback.HandoffQueue.
func (q *HandoffQueue) TTL() time.Duration { return q.ttl }

func (q *HandoffQueue) unavailable(op string, err error) error {
	return fmt.Errorf("%w: handoffs %s: %w", ErrUnavailable, op, err)
}

// The handoff scripts' own library: server time, liveness, events.
const handoffLib = `
local A = P .. 'a'
local function nowms()
  local tm = redis.call('TIME')
  return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
local function changed() redis.call('PUBLISH', P .. 'ev', '1') end
local function pos(k)
  if redis.call('HGET', k, 'status') ~= 'pending' then return 0 end
  local r = redis.call('ZRANK', Q, redis.call('HGET', k, 'qm'))
  if r then return r + 1 end
  return 0
end
local function entry(t)
  local k = P .. 't:' .. t
  if redis.call('EXISTS', k) == 0 then return false end
  return {redis.call('HGETALL', k), pos(k)}
end
local function done(t, to, keepms)
  finish(t, to, (to == 'expired') and 'expired' or 'cancelled_queued', 'cancelled_active,released_cancelled', keepms)
  redis.call('ZREM', A, t)
end
`

func handoffScript(body string) *redis.Script { return script(handoffLib + body) }

func parseEntry(v any) (fallback.HandoffEntry, bool) {
	pair, _ := v.([]any)
	if len(pair) != 2 {
		return fallback.HandoffEntry{}, false
	}
	m := flat(pair[0])
	if m["ticket"] == "" {
		return fallback.HandoffEntry{}, false
	}
	p, _ := pair[1].(int64)
	attempt, _ := strconv.Atoi(m["attempt"])
	return fallback.HandoffEntry{
		Ref: m["ticket"], Call: m["call"], Turn: m["turn"], Summary: m["summary"], Born: unns(m["born"]),
		State: fallback.HandoffState(m["status"]), Position: int(p), Agent: m["holder"], Attempt: attempt, Tenant: m["tenant"],
	}, true
}

// ARGV[1] prefix, [2] ticket, [3] bound, [4] call, [5] turn, [6] summary,
// [7] born, [8] ttl ms, [9] tenant, [10] the tenant's share (0: none).
var enqueueHandoff = handoffScript(`
if overShare(ARGV[2], ARGV[9], tonumber(ARGV[10])) then return {-4, false} end
local r = enqueue(ARGV[2], tonumber(ARGV[3]), {'call', ARGV[4], 'turn', ARGV[5], 'summary', ARGV[6], 'born', ARGV[7], 'tenant', ARGV[9]})
if r < 0 then return {r, false} end
redis.call('ZADD', A, nowms() + tonumber(ARGV[8]), ARGV[2])
changed()
return {1, entry(ARGV[2])}
`)

// Enqueue implements fallback.HandoffQueue.
func (q *HandoffQueue) Enqueue(ctx context.Context, e fallback.HandoffEntry) (fallback.HandoffEntry, stages.Disposition, error) {
	if e.Ref == "" || e.Call == "" || e.Born.IsZero() {
		return e, 0, fmt.Errorf("redisqueue: enqueue handoff: empty ticket, call or time")
	}
	v, err := enqueueHandoff.Run(ctx, q.rdb, nil, q.prefix, e.Ref, q.cfg.HandoffQueue, e.Call, e.Turn, e.Summary, ns(e.Born), q.ttl.Milliseconds(), e.Tenant, q.tenantWaiting).Slice()
	if err != nil {
		return e, 0, q.unavailable("enqueue", err)
	}
	switch code, _ := v[0].(int64); code {
	case -4:
		return e, stages.Overloaded, nil
	case -1:
		return e, 0, fmt.Errorf("redisqueue: enqueue handoff: ticket %q exists", e.Ref)
	}
	got, _ := parseEntry(v[1])
	return got, stages.Queued, nil
}

// ARGV[1] prefix, [2] agent, [3] ticket (” for the head), [4] slots.
// Codes: 1 claimed, -1 unknown, -2 taken, -5 slots busy, -7 not next.
var claimHandoff = handoffScript(`
local t = ARGV[3]
local head = redis.call('ZRANGE', Q, 0, 0)
if t == '' then
  if #head == 0 then return {-1, false} end
  t = string.sub(head[1], 29)
else
  local st = redis.call('HGET', P .. 't:' .. t, 'status')
  if st == 'claimed' then return {-2, false} end
  if st ~= 'pending' then return {-1, false} end
  if head[1] ~= redis.call('HGET', P .. 't:' .. t, 'qm') then return {-7, false} end
end
if redis.call('SCARD', H) >= tonumber(ARGV[4]) then return {-5, false} end
take(t, ARGV[2])
changed()
return {1, entry(t)}
`)

// Claim implements fallback.HandoffQueue.
func (q *HandoffQueue) Claim(ctx context.Context, agent, ref string, now time.Time) (fallback.HandoffEntry, error) {
	v, err := claimHandoff.Run(ctx, q.rdb, nil, q.prefix, agent, ref, q.cfg.HandoffSlots).Slice()
	if err != nil {
		return fallback.HandoffEntry{}, q.unavailable("claim", err)
	}
	switch code, _ := v[0].(int64); code {
	case -1:
		return fallback.HandoffEntry{}, fallback.ErrHandoffUnknown
	case -2:
		return fallback.HandoffEntry{}, fallback.ErrHandoffTaken
	case -5:
		return fallback.HandoffEntry{}, fmt.Errorf("%w: %d handoffs claimed in the fleet", fallback.ErrSlotsBusy, q.cfg.HandoffSlots)
	case -7:
		return fallback.HandoffEntry{}, fallback.ErrHandoffNotNext
	}
	e, _ := parseEntry(v[1])
	return e, nil
}

// ARGV[1] prefix, [2] op (ack, fail, release), [3] ticket, [4] attempt,
// [5] cutoff (born before it: expired on release), [6] keep ms.
// Codes: 1 done (queued again, for release), 2 released and expired, -3 lost.
// fail is an ack counted failed (HandoffGate.ReleaseFailed).
var settleHandoff = handoffScript(`
local t = ARGV[3]
local k = P .. 't:' .. t
if redis.call('HGET', k, 'status') ~= 'claimed' or redis.call('HGET', k, 'attempt') ~= ARGV[4] then
  return {-3, entry(t)}
end
local code = 1
if ARGV[2] == 'ack' or ARGV[2] == 'fail' then
  local to = (ARGV[2] == 'ack') and 'completed' or 'failed'
  finish(t, to, '', to, tonumber(ARGV[6]))
  redis.call('ZREM', A, t)
else
  requeue(t, 'released_cancelled')
  if redis.call('HGET', k, 'born') < ARGV[5] then
    done(t, 'expired', tonumber(ARGV[6]))
    code = 2
  end
end
changed()
return {code, entry(t)}
`)

func (q *HandoffQueue) settle(ctx context.Context, op, ref string, attempt int, now time.Time) (fallback.HandoffEntry, int64, error) {
	cutoff := ns(now.Add(-q.cfg.HandoffMaxWait))
	v, err := settleHandoff.Run(ctx, q.rdb, nil, q.prefix, op, ref, attempt, cutoff, doneKeep.Milliseconds()).Slice()
	if err != nil {
		return fallback.HandoffEntry{}, 0, q.unavailable(op, err)
	}
	code, _ := v[0].(int64)
	e, _ := parseEntry(v[1])
	if code == -3 {
		return e, code, fmt.Errorf("%w: %s %q attempt %d: now %s, attempt %d", fallback.ErrHandoffLost, op, ref, attempt, e.State, e.Attempt)
	}
	return e, code, nil
}

// Ack implements fallback.HandoffQueue.
func (q *HandoffQueue) Ack(ctx context.Context, ref string, attempt int, now time.Time) (fallback.HandoffEntry, error) {
	e, _, err := q.settle(ctx, "ack", ref, attempt, now)
	return e, err
}

// Fail implements fallback.HandoffQueue.
func (q *HandoffQueue) Fail(ctx context.Context, ref string, attempt int, now time.Time) (fallback.HandoffEntry, error) {
	e, _, err := q.settle(ctx, "fail", ref, attempt, now)
	return e, err
}

// Refuse implements fallback.HandoffQueue.
func (q *HandoffQueue) Refuse(ctx context.Context, d stages.Disposition) error {
	return refuse(ctx, q.rdb, q.prefix, refusalField(d))
}

// Release implements fallback.HandoffQueue.
func (q *HandoffQueue) Release(ctx context.Context, ref string, attempt int, now time.Time) (stages.Disposition, error) {
	_, code, err := q.settle(ctx, "release", ref, attempt, now)
	if err != nil {
		return 0, err
	}
	if code == 2 {
		return stages.Expired, nil
	}
	return stages.Queued, nil
}

// ARGV[1] prefix, [2] ticket, [3] to, [4] keep ms. Codes: 1 resolved now,
// 0 left as it was (not live, or claimed and to is expired), -1 unknown.
var resolveHandoff = handoffScript(`
local t = ARGV[2]
local before = entry(t)
if not before then return {-1, false} end
local st = redis.call('HGET', P .. 't:' .. t, 'status')
if (st ~= 'pending' and st ~= 'claimed') or (ARGV[3] == 'expired' and st ~= 'pending') then return {0, before} end
done(t, ARGV[3], tonumber(ARGV[4]))
changed()
return {1, before}
`)

// Resolve implements fallback.HandoffQueue.
func (q *HandoffQueue) Resolve(ctx context.Context, ref string, to fallback.HandoffState) (fallback.HandoffEntry, error) {
	if to.Live() || to == fallback.HandoffCompleted {
		return fallback.HandoffEntry{}, fmt.Errorf("redisqueue: resolve handoff %q: bad state %q", ref, to)
	}
	v, err := resolveHandoff.Run(ctx, q.rdb, nil, q.prefix, ref, string(to), doneKeep.Milliseconds()).Slice()
	if err != nil {
		return fallback.HandoffEntry{}, q.unavailable("resolve", err)
	}
	if code, _ := v[0].(int64); code == -1 {
		return fallback.HandoffEntry{}, fmt.Errorf("%w: %q", fallback.ErrHandoffUnknown, ref)
	}
	e, _ := parseEntry(v[1])
	return e, nil
}

var listHandoffs = handoffScript(`
local out = {}
for _, m in ipairs(redis.call('ZRANGE', Q, 0, -1)) do
  local e = entry(string.sub(m, 29))
  if e then out[#out + 1] = e end
end
for _, t in ipairs(redis.call('SORT', H, 'ALPHA')) do
  local e = entry(t)
  if e then out[#out + 1] = e end
end
return out
`)

// List implements fallback.HandoffQueue.
func (q *HandoffQueue) List(ctx context.Context) ([]fallback.HandoffEntry, error) {
	v, err := listHandoffs.Run(ctx, q.rdb, nil, q.prefix).Slice()
	if err != nil {
		return nil, q.unavailable("list", err)
	}
	return entries(v), nil
}

func entries(v []any) []fallback.HandoffEntry {
	out := make([]fallback.HandoffEntry, 0, len(v))
	for _, x := range v {
		if e, ok := parseEntry(x); ok {
			out = append(out, e)
		}
	}
	return out
}

var getHandoffs = handoffScript(`
local out = {}
for i = 2, #ARGV do
  local e = entry(ARGV[i])
  if e then out[#out + 1] = e end
end
return out
`)

// Get implements fallback.HandoffQueue.
func (q *HandoffQueue) Get(ctx context.Context, refs []string) ([]fallback.HandoffEntry, error) {
	args := make([]any, 0, len(refs)+1)
	args = append(args, q.prefix)
	for _, t := range refs {
		args = append(args, t)
	}
	v, err := getHandoffs.Run(ctx, q.rdb, nil, args...).Slice()
	if err != nil {
		return nil, q.unavailable("get", err)
	}
	return entries(v), nil
}

// ARGV[1] prefix, [2] ttl ms, [3] number of callers, then callers, then
// ticket, attempt pairs of claims.
var keepHandoffs = handoffScript(`
local until_ = nowms() + tonumber(ARGV[2])
local n = tonumber(ARGV[3])
for i = 4, 3 + n do
  local st = redis.call('HGET', P .. 't:' .. ARGV[i], 'status')
  if st == 'pending' or st == 'claimed' then redis.call('ZADD', A, until_, ARGV[i]) end
end
for i = 4 + n, #ARGV, 2 do
  local k = P .. 't:' .. ARGV[i]
  if redis.call('HGET', k, 'status') == 'claimed' and redis.call('HGET', k, 'attempt') == ARGV[i + 1] then
    redis.call('XCLAIM', S, G, 'claimed', 0, redis.call('HGET', k, 'sid'), 'JUSTID')
  end
end
return 1
`)

// Keep implements fallback.HandoffQueue.
func (q *HandoffQueue) Keep(ctx context.Context, callers []string, claims map[string]int) error {
	args := []any{q.prefix, q.ttl.Milliseconds(), len(callers)}
	for _, t := range callers {
		args = append(args, t)
	}
	for t, n := range claims {
		args = append(args, t, n)
	}
	if err := keepHandoffs.Run(ctx, q.rdb, nil, args...).Err(); err != nil {
		return q.unavailable("keep", err)
	}
	return nil
}

// ARGV[1] prefix, [2] ttl ms, [3] cutoff, [4] keep ms.
var sweepHandoffs = handoffScript(`
local out, requeued = sweep(tonumber(ARGV[2]), ARGV[3], 'expired', tonumber(ARGV[4]))
for _, t in ipairs(out) do redis.call('ZREM', A, t) end
local gone = redis.call('ZRANGEBYSCORE', A, '-inf', nowms(), 'LIMIT', 0, 100)
for _, t in ipairs(gone) do
  local st = redis.call('HGET', P .. 't:' .. t, 'status')
  if st == 'pending' or st == 'claimed' then done(t, 'cancelled', tonumber(ARGV[4])) end
  redis.call('ZREM', A, t)
end
if #out + requeued + #gone > 0 then changed() end
return #out + requeued + #gone
`)

// Sweep implements fallback.HandoffQueue.
func (q *HandoffQueue) Sweep(ctx context.Context, now time.Time) error {
	err := sweepHandoffs.Run(ctx, q.rdb, nil, q.prefix, q.ttl.Milliseconds(), ns(now.Add(-q.cfg.HandoffMaxWait)), doneKeep.Milliseconds()).Err()
	if err != nil {
		return q.unavailable("sweep", err)
	}
	return nil
}

// Watch implements fallback.HandoffQueue with a pub/sub subscription, which
// go-redis re-establishes after a connection loss. Events missed meanwhile
// are made up for by the service's poll.
func (q *HandoffQueue) Watch(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	ps := q.rdb.Subscribe(ctx, q.prefix+"ev")
	go func() {
		defer close(out)
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// Snapshot implements fallback.HandoffQueue.
func (q *HandoffQueue) Snapshot(ctx context.Context, now time.Time) (stages.Snapshot, error) {
	sn, err := snapshot(ctx, q.rdb, q.prefix, q.cfg.HandoffLimits(), now)
	if err != nil {
		err = q.unavailable("snapshot", err)
	}
	q.last.keep(sn, err)
	return sn, err
}
