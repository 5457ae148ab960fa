-- Writes a limit's buckets back (see refill), with a time to live: once full again and not paused it
-- is the same as no hash at all, so it expires then.
local function saveBuckets(key, limit, b, now)
  redis.call('HSET', key, 'r', b.r, 't', b.t, 'at', now, 'until', b.pausedUntil)
  local full = 0
  if limit.requestsPerMs > 0 then
    full = math.max(full, (limit.requestBurst - b.r) / limit.requestsPerMs)
  end
  if limit.tokensPerMs > 0 then
    full = math.max(full, (limit.tokenBurst - b.t) / limit.tokensPerMs)
  end
  full = math.max(full, b.pausedUntil - now)
  redis.call('PEXPIRE', key, math.ceil(full) + 1000)
end
