-- A limit's buckets as they stand at `now`: read from the hash `key` (requests `r`, tokens `t`,
-- last refill `at`, paused until `until`) and refilled for the time since, at `limit.requestsPerMs`
-- and `limit.tokensPerMs`, up to their bursts. A bucket may be below zero: requests granted ahead of
-- time (see acquire-1.lua), repaid by the refill before anything more is granted. A limit with no
-- hash (never used, or expired full) starts full.
local function refill(key, limit, now)
  local r, t, at, pausedUntil = unpack(redis.call('HMGET', key, 'r', 't', 'at', 'until'))
  local b = { r = tonumber(r) or limit.requestBurst, t = tonumber(t) or limit.tokenBurst, pausedUntil = tonumber(pausedUntil) or 0 }
  local elapsed = math.max(0, now - (tonumber(at) or now))
  b.r = math.min(limit.requestBurst, b.r + elapsed * limit.requestsPerMs)
  b.t = math.min(limit.tokenBurst, b.t + elapsed * limit.tokensPerMs)
  return b
end
