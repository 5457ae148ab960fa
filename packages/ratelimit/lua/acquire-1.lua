#!lua
--[[
  Grants a rate limit's requests and tokens to one caller, in arrival order across the fleet: each
  grant is taken from the buckets at once, and when they hold too little the caller is told how long
  to wait first (the buckets go below zero: later callers wait behind it). So however many workers
  draw on the limit, what they send stays within the rate, plus one burst. A caller whose wait would
  be longer than ARGV[8] is granted nothing and asks again after that long.

  Input:
    KEYS[1] the limit's buckets (hash: r, t, at, until; see includes/refill.lua)
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] requests per minute (0: requests are not limited)
    ARGV[3] tokens per minute (0: tokens are not limited)
    ARGV[4] request burst
    ARGV[5] token burst
    ARGV[6] requests wanted
    ARGV[7] tokens wanted (an estimate; see account-1.lua)
    ARGV[8] longest wait granted (ms)

  Returns:
    { granted (1: taken, go after the wait; 0: nothing taken), wait (ms) }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "limitOf"
--- @include "refill"
--- @include "saveBuckets"
local key = KEYS[1]
local now = redisNow(ARGV[1])
local limit = limitOf(ARGV)
local requests, tokens, maxWait = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local b = refill(key, limit, now)
local wait = math.max(0, b.pausedUntil - now)
if limit.requestsPerMs > 0 and b.r < requests then
  wait = math.max(wait, (requests - b.r) / limit.requestsPerMs)
end
if limit.tokensPerMs > 0 and b.t < tokens then
  wait = math.max(wait, (tokens - b.t) / limit.tokensPerMs)
end
local granted = 0
if wait <= maxWait then
  if limit.requestsPerMs > 0 then
    b.r = b.r - requests
  end
  if limit.tokensPerMs > 0 then
    b.t = b.t - tokens
  end
  granted = 1
end
saveBuckets(key, limit, b, now)
return { granted, math.ceil(wait) }
