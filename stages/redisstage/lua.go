package redisstage

import "github.com/redis/go-redis/v9"

// Every script starts with this prelude. Times of work (Born, deadlines, now,
// cancellation) travel as 20-digit zero-padded nanosecond strings, because
// Lua numbers are doubles and lose nanoseconds; fixed-width digit strings
// compare correctly as strings. Lease expiry uses the Redis server's own
// clock (TIME) in milliseconds, so replica clocks never decide a lease.
//
// ARGV[1] key prefix, [2] lease TTL ms, [3] tombstone bound, [4] warm-up ms,
// [5] slots, [6] waiting, [7] owner idle ms, [8] pump bound (0: no pump),
// [9] now (20 digits); operation arguments follow from ARGV[10]. The
// waiting bound ends in "f" under Fair order (stages.Fair). The slot limit
// in force is the key lim when set (SetSlots: one limit for the fleet,
// moved at run time), else ARGV[5].
//
// Waiting work per tenant (Limits.TenantWaiting) is the hash tw, tenant ->
// count of its queued jobs, holding only nonzero counts: a tenant with
// nothing queued leaves no field, and an empty queue leaves no key. Every
// script that removes a queued job gives its tenant's place back (unqueue).
const prelude = `
local P = ARGV[1]
local LEASE = tonumber(ARGV[2])
local TOMB = tonumber(ARGV[3])
local WARM = tonumber(ARGV[4])
local SLOTS = tonumber(redis.call('GET', P .. 'lim') or ARGV[5])
local WAITING = tonumber(string.match(ARGV[6], '^%d+'))
local FAIR = string.sub(ARGV[6], -1) == 'f'
local IDLE = tonumber(ARGV[7])
local PUMP = tonumber(ARGV[8])
local NOW = ARGV[9]
local QUEUED, ADMITTED, OVERLOADED, EXPIRED, STALE, OOO, CLOSED, BUSY, EMPTY, ACTIVE, CANCELLED, COMPLETED, FAILED = 1,2,3,4,5,6,7,8,9,10,11,12,13
local t = redis.call('TIME')
local MS = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- recount rebuilds the tenant counts from the queue that survived a loss
-- (a failover can keep the queue but lose the epoch): counts then match
-- what is queued, not what an older dataset had.
local function recount()
  redis.call('DEL', P .. 'tw', P .. 'tu', P .. 'ls')
  for _, id in ipairs(redis.call('LRANGE', P .. 'q', 0, -1)) do
    local tn = redis.call('HGET', P .. 'r:' .. id, 'tn')
    if tn and tn ~= '' then redis.call('HINCRBY', P .. 'tw', tn, 1) else redis.call('INCR', P .. 'tu') end
  end
end

-- unqueue gives back the place of tenant's job that has just left the
-- queue. An empty queue holds no tenant's work, so the hash goes too: that
-- also corrects counts a replica of an older version left behind.
--
-- Work without a tenant is counted in tu; ls holds, for Fair order, when
-- each tenant with waiting work was last served (by the counter lseq), and
-- a tenant left with nothing waiting leaves it (as admit.Controller does).
local function unqueue(tenant)
  if tenant and tenant ~= '' then
    if redis.call('HINCRBY', P .. 'tw', tenant, -1) <= 0 then
      redis.call('HDEL', P .. 'tw', tenant)
      redis.call('HDEL', P .. 'ls', tenant)
    end
  elseif redis.call('DECR', P .. 'tu') <= 0 then
    redis.call('DEL', P .. 'tu')
    redis.call('HDEL', P .. 'ls', '')
  end
  if redis.call('LLEN', P .. 'q') == 0 then redis.call('DEL', P .. 'tw', P .. 'tu', P .. 'ls') end
end

-- served notes that tenant's work took a slot, under Fair order; before
-- unqueue, which forgets a tenant left with nothing waiting.
local function served(tenant)
  if FAIR then redis.call('HSET', P .. 'ls', tenant or '', redis.call('INCR', P .. 'lseq')) end
end

-- expired counts work leaving the queue too old, and whether Fair order
-- had passed it over (stages.Ledger.ExpiredOvertaken).
local function expired(id)
  redis.call('HINCRBY', P .. 'ledger', 'expired', 1)
  if redis.call('HEXISTS', P .. 'r:' .. id, 'ov') == 1 then redis.call('HINCRBY', P .. 'ledger', 'xo', 1) end
end

-- After the dataset is lost (Redis restarted without persistence), leases
-- held before are unknown: stay closed for a warm-up so they run out, and
-- restart the fencing counter above every token issued before.
local function warm()
  local e = redis.call('GET', P .. 'epoch')
  if not e then
    redis.call('SET', P .. 'epoch', MS)
    recount()
    local f = tonumber(redis.call('GET', P .. 'fence') or '0')
    if f < MS * 1000 then redis.call('SET', P .. 'fence', MS * 1000) end
    return WARM <= 0
  end
  return MS >= tonumber(e) + WARM
end
local WARMED = warm()

local function closed()
  return redis.call('EXISTS', P .. 'closed') == 1 or not WARMED
end

local function touch(owner)
  if IDLE > 0 then
    redis.call('PEXPIRE', P .. 'own:' .. owner, IDLE)
    redis.call('PEXPIRE', P .. 'ol:' .. owner, IDLE)
  end
  redis.call('ZADD', P .. 'owners', MS, owner)
end

local function terminal(id, owner, d)
  redis.call('DEL', P .. 'r:' .. id)
  if owner then redis.call('SREM', P .. 'ol:' .. owner, id) end
  local seq = redis.call('INCR', P .. 'tseq')
  redis.call('ZADD', P .. 'tomb', seq, id)
  redis.call('HSET', P .. 'tombd', id, d)
  local n = redis.call('ZCARD', P .. 'tomb')
  if n > TOMB then
    local old = redis.call('ZPOPMIN', P .. 'tomb', n - TOMB)
    for i = 1, #old, 2 do redis.call('HDEL', P .. 'tombd', old[i]) end
  end
end

-- Leases whose TTL ran out by the server's clock: the holder died or lost
-- contact. Only now does their capacity return.
local function purge()
  local gone = redis.call('ZRANGEBYSCORE', P .. 'lease', '-inf', MS, 'LIMIT', 0, 256)
  for _, id in ipairs(gone) do
    redis.call('ZREM', P .. 'lease', id)
    redis.call('SREM', P .. 'cln', id)
    local owner = redis.call('HGET', P .. 'r:' .. id, 'o')
    terminal(id, owner, EXPIRED)
    redis.call('HINCRBY', P .. 'ledger', 'lost', 1)
    redis.call('PUBLISH', P .. 'ev', 'l|' .. id)
  end
end
purge()

-- fairPick is the work a free slot goes to under Fair order with more
-- than one tenant waiting: the oldest of the tenant served least recently
-- (ties to the earliest), or its owner's earlier work; the work it passes
-- over is marked, and the skip counted (admit.Controller.takeFair).
local function fairPick()
  local q = redis.call('LRANGE', P .. 'q', 0, -1)
  local best, bestSeq, owners = 0, 0, {}
  for i, id in ipairs(q) do
    local o, tn = unpack(redis.call('HMGET', P .. 'r:' .. id, 'o', 'tn'))
    owners[i] = o
    local seq = tonumber(redis.call('HGET', P .. 'ls', tn or '') or '0')
    if best == 0 or seq < bestSeq then
      best, bestSeq = i, seq
      if seq == 0 then break end
    end
  end
  local owner = owners[best]
  for i = 1, best - 1 do
    if owners[i] == owner then best = i; break end
  end
  return q[best], best, q
end

-- take admits or expires the head once: returns disposition, id, token.
local function take(now)
  local id = redis.call('LINDEX', P .. 'q', 0)
  if not id then
    if closed() then return CLOSED end
    return EMPTY
  end
  local r = P .. 'r:' .. id
  local born, dl, owner, tenant = unpack(redis.call('HMGET', r, 'b', 'dl', 'o', 'tn'))
  if now < born then return -3, id end
  if now > dl then
    redis.call('LPOP', P .. 'q')
    unqueue(tenant)
    expired(id)
    terminal(id, owner, EXPIRED)
    redis.call('PUBLISH', P .. 'ev', 'x|' .. id)
    return EXPIRED, id
  end
  if not WARMED or redis.call('ZCARD', P .. 'lease') >= SLOTS then return BUSY end
  if FAIR and redis.call('HLEN', P .. 'tw') + math.min(1, tonumber(redis.call('GET', P .. 'tu') or '0')) > 1 then
    local pos, q
    id, pos, q = fairPick()
    r = P .. 'r:' .. id
    born, dl, owner, tenant = unpack(redis.call('HMGET', r, 'b', 'dl', 'o', 'tn'))
    redis.call('LREM', P .. 'q', 1, id)
    if now > dl then
      unqueue(tenant)
      expired(id)
      terminal(id, owner, EXPIRED)
      redis.call('PUBLISH', P .. 'ev', 'x|' .. id)
      return EXPIRED, id
    end
    if pos > 1 then -- the work passed over, should it expire
      for i = 1, pos - 1 do redis.call('HSET', P .. 'r:' .. q[i], 'ov', 1) end
      redis.call('HINCRBY', P .. 'ledger', 'fs', 1)
    end
  else
    redis.call('LPOP', P .. 'q')
  end
  served(tenant)
  unqueue(tenant)
  local tok = redis.call('INCR', P .. 'fence')
  redis.call('ZADD', P .. 'lease', MS + LEASE, id)
  redis.call('HSET', r, 's', ACTIVE, 't', tok)
  redis.call('HINCRBY', P .. 'ledger', 'admitted', 1)
  -- %d, not ..: concatenation would print a 16-digit token as 1.76e+15
  redis.call('PUBLISH', P .. 'ev', 'a|' .. id .. '|' .. string.format('%d', tok))
  return ADMITTED, id, tok
end

-- pump takes until busy, empty or PUMP steps, and reports the head's
-- deadline so that replicas can arm a timer for it. A negative PUMP is a
-- claim stage's pump (claim.Gate): up to -PUMP heads past their
-- deadline expire, and nothing is admitted but by a claim.
local function pump()
  local out = {0}
  if PUMP == 0 then out[2] = ''; return out end
  local last
  for i = 1, math.abs(PUMP) do
    if PUMP < 0 then
      local head = redis.call('LINDEX', P .. 'q', 0)
      local hdl = head and redis.call('HGET', P .. 'r:' .. head, 'dl')
      if not hdl or NOW <= hdl then break end
    end
    local d, id, tok = take(NOW)
    if d ~= ADMITTED and d ~= EXPIRED then last = d; break end
    out[1] = out[1] + 1
    table.insert(out, d); table.insert(out, id); table.insert(out, tok or 0)
  end
  local head = redis.call('LINDEX', P .. 'q', 0)
  local dl = ''
  if head then dl = redis.call('HGET', P .. 'r:' .. head, 'dl') or '' end
  table.insert(out, dl)
  return out
end

local function cancelActive(id, now)
  redis.call('HSET', P .. 'r:' .. id, 's', CANCELLED, 'c', now)
  redis.call('SADD', P .. 'cln', id)
  redis.call('HINCRBY', P .. 'ledger', 'ca', 1)
  redis.call('PUBLISH', P .. 'ev', 'k|' .. id)
end

local function cancelQueued(id, owner)
  local tenant = redis.call('HGET', P .. 'r:' .. id, 'tn')
  terminal(id, owner, CANCELLED)
  redis.call('LREM', P .. 'q', 0, id)
  unqueue(tenant)
  redis.call('HINCRBY', P .. 'ledger', 'cq', 1)
  redis.call('PUBLISH', P .. 'ev', 'c|' .. id)
end

-- cancelOwned cancels every live job of owner; returns the queued ones.
local function cancelOwned(owner, now)
  local gone = {}
  for _, id in ipairs(redis.call('SMEMBERS', P .. 'ol:' .. owner)) do
    local s = tonumber(redis.call('HGET', P .. 'r:' .. id, 's') or '0')
    if s == QUEUED then
      cancelQueued(id, owner)
      table.insert(gone, id)
    elseif s == ACTIVE then
      cancelActive(id, now)
    elseif s == 0 then
      redis.call('SREM', P .. 'ol:' .. owner, id)
    end
  end
  return gone
end
`

// Each script returns {code, extra, pump}; negative codes are errors:
// -1 duplicate identity, -2 unknown identity, -3 clock before head's Born,
// -4 fenced, -5 no lease, -6 generation must advance.
var (
	offerScript = redis.NewScript(prelude + `
local id, owner, gen, born, dl = ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14]
local tenant, share = ARGV[15], tonumber(ARGV[16])
if redis.call('EXISTS', P .. 'r:' .. id) == 1 or redis.call('HEXISTS', P .. 'tombd', id) == 1 then
  return {-1, '', pump()}
end
redis.call('HINCRBY', P .. 'ledger', 'offered', 1)
local o = P .. 'own:' .. owner
local og, lb = unpack(redis.call('HMGET', o, 'g', 'lb'))
local d
if not og or og ~= gen then d = STALE
elseif lb and lb ~= '' and born < lb then d = OOO
elseif NOW > dl then d = EXPIRED
elseif closed() then d = CLOSED
elseif redis.call('LLEN', P .. 'q') >= WAITING then d = OVERLOADED
elseif tenant ~= '' and share > 0 and tonumber(redis.call('HGET', P .. 'tw', tenant) or '0') >= share then
  -- over the tenant's share: Overloaded, and counted as over_share too
  d = OVERLOADED
  redis.call('HINCRBY', P .. 'ledger', 'os', 1)
else d = QUEUED end
if d ~= QUEUED then
  redis.call('HINCRBY', P .. 'ledger', 'r' .. d, 1)
  return {d, '', pump()}
end
redis.call('HSET', o, 'lb', born)
redis.call('SADD', P .. 'ol:' .. owner, id)
touch(owner)
redis.call('HSET', P .. 'r:' .. id, 'o', owner, 'g', gen, 'b', born, 'dl', dl, 's', QUEUED, 'tn', tenant)
redis.call('RPUSH', P .. 'q', id)
if tenant ~= '' then redis.call('HINCRBY', P .. 'tw', tenant, 1) else redis.call('INCR', P .. 'tu') end
redis.call('HINCRBY', P .. 'ledger', 'queued', 1)
return {QUEUED, '', pump()}
`)

	takeScript = redis.NewScript(prelude + `
local d, id, tok = take(NOW)
if d == -3 then return {-3, id, {0, ''}} end
local p = pump()
return {d, {id or '', tok or 0}, p}
`)

	pumpScript = redis.NewScript(prelude + `return {0, '', pump()}`)

	// claimScript is a claim stage's take (claim.Gate.Claim): heads
	// past their deadline expire first (PUMP < 0), then the head is
	// admitted, or want only when it is the head; otherwise want's state.
	// extra is {id, token, owner, generation} of admitted work.
	claimScript = redis.NewScript(prelude + `
local want = ARGV[10]
local p = pump()
if want ~= '' and redis.call('LINDEX', P .. 'q', 0) ~= want then
  local s = redis.call('HGET', P .. 'r:' .. want, 's')
  if not s then s = redis.call('HGET', P .. 'tombd', want) or '0' end
  return {tonumber(s), '', p}
end
local head = redis.call('LINDEX', P .. 'q', 0)
local owner, gen = '', ''
if head then owner, gen = unpack(redis.call('HMGET', P .. 'r:' .. head, 'o', 'g')) end
local d, id, tok = take(NOW)
if d == -3 then return {-3, id, p} end
head = redis.call('LINDEX', P .. 'q', 0)
local dl = ''
if head then dl = redis.call('HGET', P .. 'r:' .. head, 'dl') or '' end
p[#p] = dl
return {d, {id or '', tok or 0, owner or '', gen or ''}, p}
`)

	releaseScript = redis.NewScript(prelude + `
local id, tok, failed = ARGV[10], ARGV[11], ARGV[12] == '1'
local r = P .. 'r:' .. id
local s, owner, have = unpack(redis.call('HMGET', r, 's', 'o', 't'))
s = tonumber(s or '0')
if s ~= ACTIVE and s ~= CANCELLED then
  if s == 0 and tok ~= '0' then
    -- A token for a record that is gone or ended by its TTL: the lease
    -- was lost (or Redis lost its data), so this holder is fenced.
    local td = redis.call('HGET', P .. 'tombd', id)
    if not td or td == tostring(EXPIRED) then return {-4, '', pump()} end
  end
  return {-5, '', pump()}
end
if tok ~= '0' and tok ~= have then return {-4, '', pump()} end
redis.call('ZREM', P .. 'lease', id)
redis.call('SREM', P .. 'cln', id)
local d = COMPLETED
if s == CANCELLED then
  d = CANCELLED
  redis.call('HINCRBY', P .. 'ledger', 'rc', 1)
elseif failed then
  d = FAILED
  redis.call('HINCRBY', P .. 'ledger', 'failed', 1)
else
  redis.call('HINCRBY', P .. 'ledger', 'completed', 1)
end
terminal(id, owner, d)
return {d, '', pump()}
`)

	// renewScript extends a lease. After Redis lost its data, a lease
	// granted before the loss (its token is below the new fencing base,
	// epoch ms × 1000) whose record is gone is granted again, to its holder,
	// when a slot is free: the call in progress goes on, under a new token
	// (code -7, the token in extra), and its owner's generation is
	// registered again if no one has since. Holders renew every TTL/3, and
	// nothing new is admitted during the warm-up (one TTL), so every live
	// holder renews before new work can take its slot; one that finds no
	// free slot is fenced.
	renewScript = redis.NewScript(prelude + `
local id, tok, owner, gen = ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local r = P .. 'r:' .. id
local s, have = unpack(redis.call('HMGET', r, 's', 't'))
s = tonumber(s or '0')
if s == 0 and owner ~= '' and redis.call('HEXISTS', P .. 'tombd', id) == 0 then
  local e = tonumber(redis.call('GET', P .. 'epoch') or '0')
  if tonumber(tok) < e * 1000 and redis.call('ZCARD', P .. 'lease') < SLOTS then
    local nt = redis.call('INCR', P .. 'fence')
    redis.call('ZADD', P .. 'lease', MS + LEASE, id)
    redis.call('HSET', r, 'o', owner, 'g', gen, 's', ACTIVE, 't', nt)
    redis.call('SADD', P .. 'ol:' .. owner, id)
    local o = P .. 'own:' .. owner
    if redis.call('EXISTS', o) == 0 then redis.call('HSET', o, 'g', gen, 'lb', '') end
    touch(owner)
    redis.call('HINCRBY', P .. 'ledger', 'admitted', 1)
    return {-7, string.format('%d', nt), {0, ''}}
  end
end
if (s ~= ACTIVE and s ~= CANCELLED) or have ~= tok then return {-4, '', {0, ''}} end
redis.call('ZADD', P .. 'lease', 'XX', MS + LEASE, id)
return {s, '', {0, ''}}
`)

	rotateScript = redis.NewScript(prelude + `
local owner, gen = ARGV[10], ARGV[11]
local o = P .. 'own:' .. owner
local og = redis.call('HGET', o, 'g')
if not og then
  redis.call('HSET', o, 'g', gen, 'lb', '')
  touch(owner)
  return {0, {}, pump()}
end
if gen <= og then return {-6, og, pump()} end
redis.call('HSET', o, 'g', gen, 'lb', '')
touch(owner)
local gone = cancelOwned(owner, NOW)
return {0, gone, pump()}
`)

	// registerScript registers owner at gen when the stage does not know
	// it (Redis lost its data): code 1 when it registered it.
	registerScript = redis.NewScript(prelude + `
local owner, gen = ARGV[10], ARGV[11]
local o = P .. 'own:' .. owner
if redis.call('EXISTS', o) == 1 then return {0, '', {0, ''}} end
redis.call('HSET', o, 'g', gen, 'lb', '')
touch(owner)
return {1, '', {0, ''}}
`)

	forgetScript = redis.NewScript(prelude + `
local owner = ARGV[10]
local o = P .. 'own:' .. owner
if redis.call('EXISTS', o) == 0 then return {0, {}, pump()} end
local gone = cancelOwned(owner, NOW)
redis.call('DEL', o, P .. 'ol:' .. owner)
redis.call('ZREM', P .. 'owners', owner)
return {0, gone, pump()}
`)

	cancelScript = redis.NewScript(prelude + `
local id = ARGV[10]
local r = P .. 'r:' .. id
local s, owner = unpack(redis.call('HMGET', r, 's', 'o'))
s = tonumber(s or '0')
if s == 0 then
  local d = redis.call('HGET', P .. 'tombd', id)
  if not d then return {-2, '', pump()} end
  return {tonumber(d), '', pump()}
end
if s == QUEUED then
  cancelQueued(id, owner)
elseif s == ACTIVE then
  cancelActive(id, NOW)
end
return {CANCELLED, '', pump()}
`)

	closeScript = redis.NewScript(prelude + `
if ARGV[10] == '1' then redis.call('SET', P .. 'closed', '1') else redis.call('DEL', P .. 'closed') end
return {0, '', pump()}
`)

	// stateScript reports, for each identity, its state and lease token.
	stateScript = redis.NewScript(prelude + `
local out = {}
for i = 10, #ARGV do
  local id = ARGV[i]
  local s, tok = unpack(redis.call('HMGET', P .. 'r:' .. id, 's', 't'))
  if not s then s = redis.call('HGET', P .. 'tombd', id) or '0' end
  table.insert(out, tonumber(s)); table.insert(out, tok or '0')
end
return {0, out, {0, ''}}
`)

	snapshotScript = redis.NewScript(prelude + `
local out = {}
out[1] = closed() and 1 or 0
out[2] = WARMED and 1 or 0
out[3] = redis.call('ZCARD', P .. 'lease')
if IDLE > 0 then redis.call('ZREMRANGEBYSCORE', P .. 'owners', '-inf', MS - IDLE) end
out[4] = redis.call('ZCARD', P .. 'owners')
out[5] = redis.call('ZCARD', P .. 'tomb')
out[6] = redis.call('HGETALL', P .. 'ledger')
local borns = {}
for _, id in ipairs(redis.call('LRANGE', P .. 'q', 0, -1)) do
  table.insert(borns, redis.call('HGET', P .. 'r:' .. id, 'b') or '')
end
out[7] = borns
local cl = {}
for _, id in ipairs(redis.call('SMEMBERS', P .. 'cln')) do
  table.insert(cl, redis.call('HGET', P .. 'r:' .. id, 'c') or '')
end
out[8] = cl
out[9] = SLOTS
return {0, out, {0, ''}}
`)

	positionScript = redis.NewScript(prelude + `
local p = redis.call('LPOS', P .. 'q', ARGV[10])
if not p then return {0, '', {0, ''}} end
return {p + 1, '', {0, ''}}
`)
)

// setSlotsScript sets the fleet's slot limit to ARGV[11] when it is still
// ARGV[10] (0: whatever it is), pumps (a raised limit admits at once), and
// tells every replica the limit in force (event n): code is that limit.
var setSlotsScript = redis.NewScript(prelude + `
local old, n = tonumber(ARGV[10]), tonumber(ARGV[11])
if old ~= 0 and old ~= SLOTS then return {SLOTS, '', pump()} end
redis.call('SET', P .. 'lim', n)
SLOTS = n
redis.call('PUBLISH', P .. 'ev', 'n|' .. n)
return {n, '', pump()}
`)

var readyScript = redis.NewScript(prelude + `return {WARMED and 1 or 0, '', {0, ''}}`)
