#!lua
--[[
  Takes the schedules that are due (next tick at or before now, on Redis's clock), leasing each:
  its score moves to now + leaseMs, so no other worker takes it meanwhile. The taker records the
  round with advanceSchedule, which puts the schedule back at its next tick; when the taker dies
  first, the lease lapses and another worker takes the same ticks (their tasks have fixed ids, so
  they are created once). Paused schedules sit at +inf and are never taken.

  Input:
    KEYS[1] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] leaseMs
    ARGV[3] schedules taken at most

  Returns:
    { now, the earliest score left after the take ('' when nothing is due at a finite time), id... }
]]
--- @include "@flotilla/broker/redisNow"
local due = KEYS[1]
local now = redisNow(ARGV[1])
local leaseMs, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, limit)
local reply = { now, '' }
for _, id in ipairs(ids) do
  redis.call('ZADD', due, now + leaseMs, id)
  reply[#reply + 1] = id
end
local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
if first[2] and first[2] ~= 'inf' then
  reply[2] = first[2]
end
return reply
