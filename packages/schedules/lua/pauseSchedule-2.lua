#!lua flags=allow-oom
--[[
  Pauses a schedule: it leaves the due order (its score becomes +inf, so it is still listed) and
  fires nothing until resumed. A round that took it before finishes and is recorded, but does not
  put it back in the due order. Pausing a paused schedule changes nothing.

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id
    ARGV[2] now (ms; '' for Redis's clock)

  Returns:
    1 paused (or already paused), 0 no such schedule
]]
--- @include "@flotilla/broker/redisNow"
local key, due = KEYS[1], KEYS[2]
local id = ARGV[1]
if redis.call('EXISTS', key) == 0 then
  return 0
end
if redis.call('HGET', key, 'paused') ~= '1' then
  redis.call('HSET', key, 'paused', '1', 'updatedAt', redisNow(ARGV[2]))
end
redis.call('ZADD', due, '+inf', id)
return 1
