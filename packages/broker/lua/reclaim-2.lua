#!lua
--[[
  Takes over entries of a lane whose holder's lease lapsed, oldest first. An entry is taken only once
  it has been idle for its holder's lease (as recorded in the leases hash), never merely for the
  reclaimer's own: in a fleet of workers with different leases, a worker with a short lease must not
  take a live run from one with a long lease that renews every sixth of it. Records this worker's
  lease there too.
  Every scan starts at the lane's oldest pending entry: a task whose worker died has waited longest,
  so it is taken before any entry that lapsed after it (a scan that went on from where the last one
  stopped left entries behind it unseen until it came round again, which under a steady stream of
  takeovers could take as long as the backlog). It looks at the entries idle for at least the
  reclaimer's lease (its own included: their renewals failed), a window at a time, passing over those
  whose holder's lease has not lapsed, until it has taken `count` or looked at MAX_LOOKED.

  Input:
    KEYS[1] lane
    KEYS[2] the queue's leases (hash: consumer -> lease ms)
    ARGV[1] consumer group
    ARGV[2] consumer (the reclaimer)
    ARGV[3] the reclaimer's lease (ms): recorded, and the least idle time of any entry it takes
    ARGV[4] count: most entries to take

  Returns:
    { { entryId, fields }, ... }: the entries taken, oldest first (an entry deleted from the lane is dropped)
    the error NOGROUP when the lane has no consumer group
]]
-- Entries idle past the reclaimer's lease looked at in one call at most: those of live holders with a
-- longer lease are passed over, and must not make a scan unbounded.
local MAX_LOOKED = 1000
local lane, leases = KEYS[1], KEYS[2]
local group, consumer, leaseMs, count = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('HSET', leases, consumer, leaseMs)
local window = math.min(MAX_LOOKED, math.max(10, count * 10))
local taken = {}
local from = '-'
local looked = 0
while #taken < count and looked < MAX_LOOKED do
  local pending = redis.pcall('XPENDING', lane, group, 'IDLE', leaseMs, from, '+', window)
  if type(pending) == 'table' and pending.err then
    return pending
  end
  if #pending == 0 then
    break
  end
  looked = looked + #pending
  local holders = {}
  for i, p in ipairs(pending) do
    holders[i] = p[2]
  end
  local held = redis.call('HMGET', leases, unpack(holders))
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
        break
      end
    end
  end
  if #pending < window then
    break
  end
  from = '(' .. pending[#pending][1]
end
return taken
