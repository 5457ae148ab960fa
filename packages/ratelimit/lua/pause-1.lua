#!lua
--[[
  A provider asked to be left alone (a 429 with Retry-After): the limit grants nothing to anyone
  until then. A shorter pause than one in force changes nothing; a pause of 0 asks how long the one
  in force has left (a caller granted ahead of time checks it before it sends). A pause made or
  lengthened is announced on the limit's channel, so every worker holds requests it was granted
  before the pause and has not sent yet.

  Input:
    KEYS[1] the limit's buckets
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2..5] the limit: requests per minute, tokens per minute, request burst, token burst
    ARGV[6] how long (ms)
    ARGV[7] the limit's pause channel (a sharded channel of KEYS[1]'s slot; '' announces nothing)

  Returns:
    how long the pause in force has left (ms; 0: none)
]]
--- @include "@flotilla/broker/redisNow"
--- @include "limitOf"
--- @include "refill"
--- @include "saveBuckets"
local key = KEYS[1]
local now = redisNow(ARGV[1])
local limit = limitOf(ARGV)
local b = refill(key, limit, now)
local before = b.pausedUntil
b.pausedUntil = math.max(b.pausedUntil, now + tonumber(ARGV[6]))
saveBuckets(key, limit, b, now)
local left = math.ceil(math.max(0, b.pausedUntil - now))
if b.pausedUntil > before and ARGV[7] ~= '' then
  redis.call('SPUBLISH', ARGV[7], tostring(left))
end
return left
