#!lua
--[[
  Takes events for a consumer to deliver again: first its group's retries that are due, then events
  whose holder's lease lapsed (the holder died or froze: a live holder renews every third of its
  lease, see renew-2). A lapsed event is taken only once it was idle for its holder's lease, never
  merely for the reclaimer's own. Events waiting in the retries are not lapsed: they wait for their
  time. Scans the pending list from `cursor` like XAUTOCLAIM, looking at up to ten times `count`
  lapsed events and taking up to `count`; returns where the next scan goes on ('0-0': the end), so
  a caller covers the whole pending list. Each delivery taken counts one (XCLAIM, and the
  group's `delivered` counter); each lapsed one taken also counts one `reclaimed` (the group's
  counter and the metrics stream), and the reply says how many those were, so the caller's
  OpenTelemetry counter tells takeovers from retries.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's retries (sorted set: event id -> due at, ms)
    KEYS[3] the group's last errors (hash)
    KEYS[4] the group's leases (hash: consumer -> lease ms)
    KEYS[5] the topic's counters (hash)
    KEYS[6] the topic's metrics (stream)
    ARGV[1] group
    ARGV[2] consumer (the reclaimer)
    ARGV[3] the reclaimer's lease (ms)
    ARGV[4] count: most events to take
    ARGV[5] cursor ('0-0': the start)
    ARGV[6] now (ms)
    ARGV[7] metrics' maxLen

  Returns:
    { next cursor, { { id, fields, deliveries, last error JSON or false }, ... }, reclaimed }
    the events taken: the due retries first, then the lapsed ones; reclaimed: how many of them
    were lapsed (the last `reclaimed` of the list)
    the error NOGROUP when the group does not exist
]]
--- @include "noteDelivery"
local stream, retries, errors, leases, stats, metrics = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local group, consumer, leaseMs, count, cursor, now, metricsMaxLen = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local pending = redis.pcall('XPENDING', stream, group, 'IDLE', leaseMs, cursor, '+', count * 10)
if type(pending) == 'table' and pending.err then
  return pending
end
redis.call('HSET', leases, consumer, leaseMs)
local taken = {}
local function take(id, minIdle, deliveries)
  local claimed = redis.call('XCLAIM', stream, group, consumer, minIdle, id)
  if claimed[1] then
    taken[#taken + 1] = { id, claimed[1][2], deliveries + 1, redis.call('HGET', errors, id) }
    return true
  end
  return false
end

for _, id in ipairs(redis.call('ZRANGEBYSCORE', retries, '-inf', now, 'LIMIT', 0, count)) do
  redis.call('ZREM', retries, id)
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  if #p == 1 then
    take(id, 0, p[1][4])
  end
end

local reclaimed = 0
local function done(next)
  if #taken > 0 then
    redis.call('HINCRBY', stats, group .. ':delivered', #taken)
  end
  if reclaimed > 0 then
    redis.call('HINCRBY', stats, group .. ':reclaimed', reclaimed)
  end
  return { next, taken, reclaimed }
end

if #pending == 0 then
  return done('0-0')
end
local holders = {}
for i, p in ipairs(pending) do
  holders[i] = p[2]
end
local held = redis.call('HMGET', leases, unpack(holders))
local last = #pending
for i, p in ipairs(pending) do
  if #taken >= count then
    last = i - 1
    break
  end
  local id, idle = p[1], p[3]
  local threshold = math.max(leaseMs, tonumber(held[i] or '') or 0)
  if idle >= threshold and not redis.call('ZSCORE', retries, id) then
    if take(id, threshold, p[4]) then
      reclaimed = reclaimed + 1
      noteDelivery(metrics, metricsMaxLen, 'reclaimed', group, consumer, id, p[4] + 1)
    end
  end
end
if last == #pending and #pending < count * 10 then
  return done('0-0')
end
if last == 0 then
  return done(cursor)
end
local ms, seq = string.match(pending[last][1], '^(%d+)-(%d+)$')
return done(ms .. '-' .. (tonumber(seq) + 1))
