package redisqueue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/stages"
)

// The core is one fleet-wide queue of tickets on a Redis stream with a
// consumer group, shared by the callback store and the handoff queue.
// Under the prefix P (one hash tag, so every key of a queue sits in one
// slot):
//
//	P.."s"      the stream; one entry per live ticket, field t = ticket
//	P.."q"      waiting tickets in stream order: zset of "PADDEDID ticket"
//	P.."h"      claimed tickets: a set, its size is the claim slots used
//	P.."t:"..T  the ticket's record: status, attempt, holder, sid, qm, born...
//	P.."n"      the ledger: counters named as stages.Ledger's fields
//
// A waiting ticket is either undelivered (after the group's last-delivered
// id: XREADGROUP ">" hands it out) or returned (in the pending entries list
// of the consumer "returned": XCLAIM hands it out). Returned entries were
// delivered before, so their ids are lower than every undelivered one, and
// stream order is one order over both: the head is the first member of q.
// A claim moves the entry to the consumer "claimed"; its idle time there,
// measured by the Redis server's clock, is the claim's age. A claim left
// idle for longer than the claim TTL (its worker died, or an operator's
// lease ran out) is taken over by XAUTOCLAIM in Sweep and put back at its
// place. Done work is XACKed and XDELed, so the stream holds only live
// tickets and XLEN bounds nothing the scripts do not already count.
const luaLib = `
local P = ARGV[1]
local S, Q, H, N, G = P .. 's', P .. 'q', P .. 'h', P .. 'n', 'claims'

local function count(field, n) redis.call('HINCRBY', N, field, n or 1) end

local function pad(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return string.rep('0', 16 - #ms) .. ms .. '-' .. string.rep('0', 10 - #seq) .. seq
end

local function ensureGroup()
  if redis.call('EXISTS', S) == 0 then
    redis.call('XGROUP', 'CREATE', S, G, '0', 'MKSTREAM')
  end
end

-- list keeps per-status sorted sets for listing (callbacks) when the
-- record has an 'lm' member.
local function relist(k, from, to)
  local lm = redis.call('HGET', k, 'lm')
  if lm and lm ~= '' and from ~= to then
    redis.call('ZREM', P .. 'l:' .. from, lm)
    redis.call('ZADD', P .. 'l:' .. to, 0, lm)
  end
end

-- enqueue appends ticket t as pending unless the waiting bound is reached.
-- fields is a flat list of record field, value pairs. 1, or -4 when full,
-- or -1 when the ticket exists.
local function enqueue(t, bound, fields)
  local k = P .. 't:' .. t
  if redis.call('EXISTS', k) == 1 then return -1 end
  ensureGroup()
  count('offered')
  if bound > 0 and redis.call('ZCARD', Q) >= bound then
    count('refused_overloaded')
    return -4
  end
  local id = redis.call('XADD', S, '*', 't', t)
  local m = pad(id) .. ' ' .. t
  redis.call('ZADD', Q, 0, m)
  redis.call('HSET', k, 'ticket', t, 'status', 'pending', 'attempt', 0, 'holder', '', 'sid', id, 'qm', m, 'delivered', '0')
  if #fields > 0 then redis.call('HSET', k, unpack(fields)) end
  count('queued')
  return 1
end

-- take hands the waiting ticket t to holder; the caller checked that t is
-- the head of Q.
local function take(t, holder)
  local k = P .. 't:' .. t
  local sid = redis.call('HGET', k, 'sid')
  if redis.call('HGET', k, 'delivered') ~= '1' then
    -- Deliver up to t; the waiting tickets read on the way stay waiting,
    -- at their place, as returned entries.
    local found = false
    while not found do
      local r = redis.call('XREADGROUP', 'GROUP', G, 'claimed', 'COUNT', 16, 'STREAMS', S, '>')
      if not r then return redis.error_reply('redisqueue: ticket ' .. t .. ' is not in its stream') end
      for _, e in ipairs(r[1][2]) do
        if e[1] == sid then found = true end
        local o = e[2] and e[2][2]
        if o then redis.call('HSET', P .. 't:' .. o, 'delivered', '1') end
        if e[1] ~= sid then redis.call('XCLAIM', S, G, 'returned', 0, e[1], 'JUSTID') end
      end
    end
  end
  redis.call('XCLAIM', S, G, 'claimed', 0, sid, 'JUSTID')
  redis.call('ZREM', Q, redis.call('HGET', k, 'qm'))
  redis.call('SADD', H, t)
  redis.call('HINCRBY', k, 'attempt', 1)
  redis.call('HSET', k, 'status', 'claimed', 'holder', holder)
  relist(k, 'pending', 'claimed')
  count('admitted')
end

-- requeue puts the claimed ticket t back at its place; how is the ledger
-- field that ends the claim (released_cancelled or lost).
local function requeue(t, how)
  local k = P .. 't:' .. t
  redis.call('XCLAIM', S, G, 'returned', 0, redis.call('HGET', k, 'sid'), 'JUSTID')
  redis.call('SREM', H, t)
  redis.call('ZADD', Q, 0, redis.call('HGET', k, 'qm'))
  redis.call('HSET', k, 'status', 'pending', 'holder', '')
  relist(k, 'claimed', 'pending')
  count(how)
  count('offered')
  count('queued')
end

-- finish ends t in the terminal status to, whatever it was; qfield and
-- hfield are the ledger fields for a waiting and for a claimed ticket.
-- keepms > 0 lets the record expire that long after.
local function finish(t, to, qfield, hfield, keepms)
  local k = P .. 't:' .. t
  local st = redis.call('HGET', k, 'status')
  local sid = redis.call('HGET', k, 'sid')
  if st == 'pending' then
    redis.call('ZREM', Q, redis.call('HGET', k, 'qm'))
    count(qfield)
  elseif st == 'claimed' then
    redis.call('SREM', H, t)
    for f in string.gmatch(hfield, '[^,]+') do count(f) end
  end
  redis.call('XACK', S, G, sid)
  redis.call('XDEL', S, sid)
  redis.call('HSET', k, 'status', to)
  relist(k, st, to)
  if keepms > 0 then redis.call('PEXPIRE', k, keepms) end
end

-- sweep returns claims idle for idlems or more to the queue (XAUTOCLAIM:
-- their worker died), then expires waiting tickets born before cutoff
-- (a fixed-width string) from the head. It returns the expired tickets and
-- the number of claims it returned.
local function sweep(idlems, cutoff, expired, keepms)
  if redis.call('EXISTS', S) == 0 then return {}, 0 end
  local cursor, requeued = '0-0', 0
  for _ = 1, 10 do
    local r = redis.call('XAUTOCLAIM', S, G, 'returned', idlems, cursor, 'COUNT', 100)
    for _, e in ipairs(r[2]) do
      local t = e[2] and e[2][2]
      if t and redis.call('HGET', P .. 't:' .. t, 'status') == 'claimed' then
        requeue(t, 'lost')
        requeued = requeued + 1
      end
    end
    cursor = r[1]
    if cursor == '0-0' then break end
  end
  local out = {}
  for _, m in ipairs(redis.call('ZRANGE', Q, 0, 99)) do
    local t = string.sub(m, 29)
    local born = redis.call('HGET', P .. 't:' .. t, 'born')
    if not born then
      redis.call('ZREM', Q, m) -- a record lost under its entry: nothing to expire
    elseif born >= cutoff then
      break
    else
      finish(t, expired, 'expired', '', keepms)
      out[#out + 1] = t
    end
  end
  return out, requeued
end

local function ledger()
  return redis.call('HGETALL', N)
end
`

// script is a core script: the library, then body.
func script(body string) *redis.Script { return redis.NewScript(luaLib + body) }

// Times travel as 20-digit nanosecond strings: Lua numbers are doubles, and
// fixed-width digit strings compare as the times they stand for.
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

// flat turns a flat HGETALL reply into a map.
func flat(v any) map[string]string {
	kv, _ := v.([]any)
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m[k], _ = kv[i+1].(string)
	}
	return m
}

// ledgerOf reads the ledger hash into a stages.Ledger.
func ledgerOf(m map[string]string) stages.Ledger {
	n := func(k string) uint64 { v, _ := strconv.ParseUint(m[k], 10, 64); return v }
	l := stages.Ledger{
		Offered:           n("offered"),
		Queued:            n("queued"),
		Admitted:          n("admitted"),
		Expired:           n("expired"),
		CancelledQueued:   n("cancelled_queued"),
		CancelledActive:   n("cancelled_active"),
		Completed:         n("completed"),
		ReleasedCancelled: n("released_cancelled"),
		Lost:              n("lost"),
	}
	l.Refused.Overloaded, l.Refused.Closed = n("refused_overloaded"), n("refused_closed")
	return l
}

var snapshotScript = script(`
local born = ''
local head = redis.call('ZRANGE', Q, 0, 0)
if #head > 0 then born = redis.call('HGET', P .. 't:' .. string.sub(head[1], 29), 'born') or '' end
return {redis.call('ZCARD', Q), redis.call('SCARD', H), born, ledger()}
`)

// snapshot reports the queue as a stage with limits l at now.
func snapshot(ctx context.Context, rdb redis.UniversalClient, prefix string, l stages.Limits, now time.Time) (stages.Snapshot, error) {
	v, err := snapshotScript.Run(ctx, rdb, nil, prefix).Slice()
	if err != nil {
		return stages.Snapshot{Limits: l, Closed: true, At: now}, err
	}
	q, _ := v[0].(int64)
	h, _ := v[1].(int64)
	sn := stages.Snapshot{Limits: l, Queued: int(q), Leased: int(h), Ledger: ledgerOf(flat(v[3])), At: now}
	if b, _ := v[2].(string); b != "" {
		sn.OldestQueued = max(now.Sub(unns(b)), 0)
	}
	return sn, nil
}
