package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
)

// CallbackStore is a fallback.CallbackStore on Redis, shared by every
// replica of a fleet: a callback one replica accepted is found, listed and
// claimed through any other, and outlives the replica (and the worker) that
// accepted it. Each change is one Lua script, so two claims of one callback
// cannot both win and a stale attempt cannot finish it.
//
// Durability is Redis's: a change is durable once Redis has it only with
// appendonly yes and appendfsync always (docs/FLEET.md). Records are kept
// after they finish, as the SQLite store keeps them.
type CallbackStore struct {
	rdb    redis.UniversalClient
	prefix string
	bound  int // pending callbacks the fleet holds at most (0: unbounded)
}

// Bound makes Accept refuse a new callback, with an error wrapping
// fallback.ErrQueueFull, while the fleet already holds pending (accepted,
// not yet claimed) callbacks: the count and the append are one script, so
// the bound holds across replicas. Serve passes -callback-queue. It returns
// s; call it before use.
func (s *CallbackStore) Bound(pending int) *CallbackStore {
	s.bound = max(pending, 0)
	return s
}

var _ fallback.CallbackStore = (*CallbackStore)(nil)

// NewCallbackStore returns the callback store called name on rdb (one per
// fleet; "callbacks" is the usual name). It does not contact Redis.
func NewCallbackStore(rdb redis.UniversalClient, name string) *CallbackStore {
	return &CallbackStore{rdb: rdb, prefix: "fdcb:{" + name + "}:"}
}

// Close does nothing: the client belongs to the caller.
func (s *CallbackStore) Close() error { return nil }

// Times travel as 20-digit nanosecond strings: Lua numbers are doubles, and
// fixed-width digit strings sort as the times they stand for.
func ns(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return fmt.Sprintf("%020d", t.UnixNano())
}

func unns(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// callKey keeps ("a:b", "c") and ("a", "b:c") apart.
func callKey(call, turn string) string { return strconv.Itoa(len(call)) + ":" + call + ":" + turn }

func (s *CallbackStore) unavailable(op string, err error) error {
	return fmt.Errorf("%w: callbacks %s: %w", ErrUnavailable, op, err)
}

// parseCallback reads a flat HGETALL reply from a script.
func parseCallback(v any) (fallback.Callback, bool) {
	kv, _ := v.([]any)
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m[k], _ = kv[i+1].(string)
	}
	return fromHash(m)
}

func fromHash(m map[string]string) (fallback.Callback, bool) {
	if m["ticket"] == "" {
		return fallback.Callback{}, false
	}
	attempt, _ := strconv.Atoi(m["attempt"])
	return fallback.Callback{
		Ticket: m["ticket"], Call: m["call"], Turn: m["turn"], Number: m["number"],
		Status: fallback.Status(m["status"]), Accepted: unns(m["accepted"]), Attempt: attempt,
		Operator: m["operator"], LeaseUntil: unns(m["lease"]), Updated: unns(m["updated"]), Note: m["note"],
	}, true
}

// ARGV[1] prefix, [2] ticket, [3] call key, [4] call, [5] turn, [6] number,
// [7] accepted, [8] bound on pending callbacks (0: none).
var acceptScript = redis.NewScript(`
local P = ARGV[1]
local existing = redis.call('GET', P .. 'ct:' .. ARGV[3])
if existing then return {0, redis.call('HGETALL', P .. 't:' .. existing)} end
local k = P .. 't:' .. ARGV[2]
if redis.call('EXISTS', k) == 1 then return {-1, {}} end
local bound = tonumber(ARGV[8])
if bound > 0 and redis.call('ZCARD', P .. 's:pending') >= bound then return {-4, {}} end
redis.call('HSET', k, 'ticket', ARGV[2], 'call', ARGV[4], 'turn', ARGV[5], 'number', ARGV[6],
  'status', 'pending', 'accepted', ARGV[7], 'attempt', 0, 'operator', '', 'lease', '0',
  'updated', ARGV[7], 'note', '')
redis.call('SET', P .. 'ct:' .. ARGV[3], ARGV[2])
redis.call('ZADD', P .. 's:pending', 0, ARGV[7] .. ' ' .. ARGV[2])
return {1, redis.call('HGETALL', k)}
`)

// Accept implements fallback.CallbackStore.
func (s *CallbackStore) Accept(ctx context.Context, c fallback.Callback) (fallback.Callback, bool, error) {
	if c.Ticket == "" || c.Call == "" || c.Turn == "" || c.Accepted.IsZero() {
		return fallback.Callback{}, false, fmt.Errorf("fallback: accept callback: empty ticket, call, turn or time")
	}
	v, err := acceptScript.Run(ctx, s.rdb, nil, s.prefix, c.Ticket, callKey(c.Call, c.Turn), c.Call, c.Turn, c.Number,
		fmt.Sprintf("%020d", c.Accepted.UnixNano()), s.bound).Slice()
	if err != nil {
		return fallback.Callback{}, false, s.unavailable("accept", err)
	}
	code, _ := v[0].(int64)
	if code == -4 {
		return fallback.Callback{}, false, fmt.Errorf("%w: %d callbacks pending in the fleet", fallback.ErrQueueFull, s.bound)
	}
	if code == -1 {
		return fallback.Callback{}, false, fmt.Errorf("fallback: accept callback: ticket %q exists for another call", c.Ticket)
	}
	got, _ := parseCallback(v[1])
	return got, code == 1, nil
}

// Find implements fallback.CallbackStore.
func (s *CallbackStore) Find(ctx context.Context, call, turn string) (fallback.Callback, bool, error) {
	ticket, err := s.rdb.Get(ctx, s.prefix+"ct:"+callKey(call, turn)).Result()
	if errors.Is(err, redis.Nil) {
		return fallback.Callback{}, false, nil
	}
	if err != nil {
		return fallback.Callback{}, false, s.unavailable("find", err)
	}
	c, err := s.Get(ctx, ticket)
	if errors.Is(err, fallback.ErrNotFound) {
		return fallback.Callback{}, false, nil
	}
	return c, err == nil, err
}

// Get implements fallback.CallbackStore.
func (s *CallbackStore) Get(ctx context.Context, ticket string) (fallback.Callback, error) {
	m, err := s.rdb.HGetAll(ctx, s.prefix+"t:"+ticket).Result()
	if err != nil {
		return fallback.Callback{}, s.unavailable("get", err)
	}
	c, ok := fromHash(m)
	if !ok {
		return fallback.Callback{}, fmt.Errorf("%w: %q", fallback.ErrNotFound, ticket)
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
  for _, m in ipairs(redis.call('ZRANGE', P .. 's:' .. ARGV[i], 0, stop)) do
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

// One conditional transition. ARGV[1] prefix, [2] ticket, [3] from status,
// [4] to status, [5] attempt that must be current (-1: any), [6] "1" to
// start a new attempt, [7] now; field, value pairs follow.
var transitionScript = redis.NewScript(`
local P = ARGV[1]
local k = P .. 't:' .. ARGV[2]
local st = redis.call('HGET', k, 'status')
if not st then return {-1, {}} end
if st ~= ARGV[3] then return {-2, redis.call('HGETALL', k)} end
local want = tonumber(ARGV[5])
if want >= 0 and tonumber(redis.call('HGET', k, 'attempt')) ~= want then return {-3, redis.call('HGETALL', k)} end
if ARGV[6] == '1' then redis.call('HINCRBY', k, 'attempt', 1) end
redis.call('HSET', k, 'status', ARGV[4], 'updated', ARGV[7])
for i = 8, #ARGV, 2 do redis.call('HSET', k, ARGV[i], ARGV[i + 1]) end
if ARGV[3] ~= ARGV[4] then
  local m = redis.call('HGET', k, 'accepted') .. ' ' .. ARGV[2]
  redis.call('ZREM', P .. 's:' .. ARGV[3], m)
  redis.call('ZADD', P .. 's:' .. ARGV[4], 0, m)
end
return {1, redis.call('HGETALL', k)}
`)

func (s *CallbackStore) transition(ctx context.Context, op, ticket string, from, to fallback.Status, attempt int, next bool,
	notLive error, now time.Time, fields ...string) (fallback.Callback, error) {
	args := []any{s.prefix, ticket, string(from), string(to), attempt, "0", ns(now)}
	if next {
		args[5] = "1"
	}
	for _, f := range fields {
		args = append(args, f)
	}
	v, err := transitionScript.Run(ctx, s.rdb, nil, args...).Slice()
	if err != nil {
		return fallback.Callback{}, s.unavailable(op, err)
	}
	cur, _ := parseCallback(v[1])
	switch code, _ := v[0].(int64); code {
	case -1:
		return fallback.Callback{}, fmt.Errorf("%w: %q", fallback.ErrNotFound, ticket)
	case -2:
		return fallback.Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", notLive, op, ticket, cur.Status, cur.Attempt)
	case -3:
		return fallback.Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", fallback.ErrLeaseLost, op, ticket, cur.Status, cur.Attempt)
	}
	return cur, nil
}

// Claim implements fallback.CallbackStore.
func (s *CallbackStore) Claim(ctx context.Context, ticket, operator string, now, until time.Time) (fallback.Callback, error) {
	return s.transition(ctx, "claim", ticket, fallback.StatusPending, fallback.StatusClaimed, -1, true, fallback.ErrNotLive, now,
		"operator", operator, "lease", ns(until))
}

// Return implements fallback.CallbackStore.
func (s *CallbackStore) Return(ctx context.Context, ticket string, attempt int, now time.Time) error {
	_, err := s.transition(ctx, "return", ticket, fallback.StatusClaimed, fallback.StatusPending, attempt, false, fallback.ErrLeaseLost, now,
		"operator", "", "lease", "0")
	return err
}

// Finish implements fallback.CallbackStore.
func (s *CallbackStore) Finish(ctx context.Context, ticket string, attempt int, to fallback.Status, note string, now time.Time) (fallback.Callback, error) {
	if to != fallback.StatusCompleted && to != fallback.StatusFailed {
		return fallback.Callback{}, fmt.Errorf("fallback: finish %q: bad status %q", ticket, to)
	}
	want := attempt
	if attempt == 0 {
		want = -1 // operator override
	}
	return s.transition(ctx, "finish", ticket, fallback.StatusClaimed, to, want, false, fallback.ErrLeaseLost, now,
		"note", note, "lease", "0")
}

// Expire implements fallback.CallbackStore.
func (s *CallbackStore) Expire(ctx context.Context, ticket string, now time.Time) error {
	_, err := s.transition(ctx, "expire", ticket, fallback.StatusPending, fallback.StatusExpired, -1, false, fallback.ErrNotLive, now)
	return err
}
