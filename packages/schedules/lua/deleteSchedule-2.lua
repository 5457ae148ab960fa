#!lua flags=allow-oom
--[[
  Deletes a schedule: its hash and its place in the due order. A round that took it before
  records nothing (its compare-and-set finds no schedule); tasks already fired are left alone.

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id

  Returns:
    1 deleted, 0 no such schedule
]]
local key, due = KEYS[1], KEYS[2]
local removed = redis.call('DEL', key) + redis.call('ZREM', due, ARGV[1])
return removed > 0 and 1 or 0
