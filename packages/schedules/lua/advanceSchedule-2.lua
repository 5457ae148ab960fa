#!lua flags=allow-oom
--[[
  Records what a round did with a schedule's due ticks (their tasks exist already) and moves it
  on, as a compare-and-set: only while the schedule's next tick and revision are still the ones
  the round read. A round that lost its lease and was overtaken, or a schedule replaced, resumed
  or deleted meanwhile, changes nothing. A resend after a lost reply finds the tick moved on and
  changes nothing either. A schedule paused meanwhile is recorded but stays out of the due order.

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id
    ARGV[2] the next tick the round read (as stored)
    ARGV[3] the revision the round read (as stored)
    ARGV[4] the new next tick (ms)
    ARGV[5] the last tick fired ('' when none was)
    ARGV[6] its task id
    ARGV[7] ticks fired
    ARGV[8] ticks skipped (the previous task had not ended)
    ARGV[9] ticks missed (older than the catch-up window)
    ARGV[10] the worker that fired

  Returns:
    1 recorded, 0 stale: the schedule moved on, changed or is gone (nothing written)
]]
local key, due = KEYS[1], KEYS[2]
local id, from, rev, nextTick, lastTick, lastTask, fired, skipped, missed, worker = unpack(ARGV, 1, 10)
local current = redis.call('HMGET', key, 'nextTickAt', 'rev', 'paused')
if current[1] ~= from or current[2] ~= rev then
  return 0
end
redis.call('HSET', key, 'nextTickAt', nextTick)
if lastTick ~= '' then
  redis.call('HSET', key, 'lastTickAt', lastTick, 'lastTaskId', lastTask, 'lastFiredBy', worker)
end
if fired ~= '0' then redis.call('HINCRBY', key, 'fired', fired) end
if skipped ~= '0' then redis.call('HINCRBY', key, 'skipped', skipped) end
if missed ~= '0' then redis.call('HINCRBY', key, 'missed', missed) end
if current[3] ~= '1' then
  redis.call('ZADD', due, nextTick, id)
end
return 1
