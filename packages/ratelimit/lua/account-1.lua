#!lua
--[[
  Settles a grant's estimated tokens with what the call used: the tokens bucket gives up the
  difference (or, for fewer used than estimated, gets it back, up to its burst).

  Input:
    KEYS[1] the limit's buckets
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2..5] the limit: requests per minute, tokens per minute, request burst, token burst
    ARGV[6] tokens used beyond the estimate (negative: fewer)

  Returns:
    the tokens bucket after it (rounded down)
]]
--- @include "@flotilla/broker/redisNow"
--- @include "limitOf"
--- @include "refill"
--- @include "saveBuckets"
local key = KEYS[1]
local now = redisNow(ARGV[1])
local limit = limitOf(ARGV)
local b = refill(key, limit, now)
if limit.tokensPerMs > 0 then
  b.t = math.min(limit.tokenBurst, b.t - tonumber(ARGV[6]))
end
saveBuckets(key, limit, b, now)
return math.floor(b.t)
