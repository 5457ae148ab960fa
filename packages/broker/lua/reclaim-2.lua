#!lua
--[[
  Takes over entries of a lane whose holder's lease lapsed. An entry is taken only once it has been
  idle for its holder's lease (as recorded in the leases hash), never merely for the reclaimer's own:
  in a fleet of workers with different leases, a worker with a short lease must not take a live run
  from one with a long lease that renews every third of it. Records this worker's lease there too.
  Scans the pending list from `cursor` like XAUTOCLAIM: it looks at up to ten times `count` lapsed
  entries (its own included: their renewals failed) and takes up to `count`; it returns where the
  next scan goes on, or '0-0' when it reached the end.

  Input:
    KEYS[1] lane
    KEYS[2] the queue's leases (hash: consumer -> lease ms)
    ARGV[1] consumer group
    ARGV[2] consumer (the reclaimer)
    ARGV[3] the reclaimer's lease (ms): recorded, and the least idle time of any entry it takes
    ARGV[4] count: most entries to take
    ARGV[5] cursor: the entry id to scan from ('0-0': the start)

  Returns:
    { next cursor, { { entryId, fields }, ... } } (an entry deleted from the lane is dropped)
    the error NOGROUP when the lane has no consumer group
]]
local lane, leases = KEYS[1], KEYS[2]
local group, consumer, leaseMs, count, cursor = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
redis.call('HSET', leases, consumer, leaseMs)
local pending = redis.pcall('XPENDING', lane, group, 'IDLE', leaseMs, cursor, '+', count * 10)
if type(pending) == 'table' and pending.err then
  return pending
end
if #pending == 0 then
  return { '0-0', {} }
end
local holders = {}
for i, p in ipairs(pending) do
  holders[i] = p[2]
end
local held = redis.call('HMGET', leases, unpack(holders))
local taken = {}
local last = #pending
for i, p in ipairs(pending) do
  local entryId, idle = p[1], p[3]
  local threshold = math.max(leaseMs, tonumber(held[i] or '') or 0)
  if idle >= threshold then
    -- XCLAIM checks the idle time again; an entry deleted from the lane leaves the pending list and is not returned.
    local claimed = redis.call('XCLAIM', lane, group, consumer, threshold, entryId)
    if claimed[1] then
      taken[#taken + 1] = claimed[1]
    end
    if #taken >= count then
      last = i
      break
    end
  end
end
if last == #pending and #pending < count * 10 then
  return { '0-0', taken }
end
local ms, seq = string.match(pending[last][1], '^(%d+)-(%d+)$')
return { ms .. '-' .. (tonumber(seq) + 1), taken }
