#!lua
--[[
  Resumes a paused schedule at its next tick after now (computed by the caller from Redis's clock):
  the ticks that passed while it was paused are not fired. Bumps the revision, so a round that took
  the schedule before it was paused cannot record over it. A schedule that is not paused is left
  as it is.

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id
    ARGV[2] the revision the caller read
    ARGV[3] next tick (ms)
    ARGV[4] now (ms): updatedAt

  Returns:
    1 resumed (or was not paused), 0 no such schedule, -1 changed since the caller read it
    (nothing written: read again)
]]
local key, due = KEYS[1], KEYS[2]
local id, expected, nextTick, now = unpack(ARGV, 1, 4)
if redis.call('EXISTS', key) == 0 then
  return 0
end
local current = redis.call('HMGET', key, 'rev', 'paused')
if current[2] ~= '1' then
  return 1
end
if current[1] ~= expected then
  return -1
end
redis.call('HSET', key, 'paused', '0', 'nextTickAt', nextTick, 'rev', (tonumber(current[1]) or 0) + 1, 'updatedAt', now)
redis.call('ZADD', due, nextTick, id)
return 1
