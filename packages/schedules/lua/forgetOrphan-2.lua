#!lua flags=allow-oom
--[[
  Removes an id from the due order when its schedule hash does not exist (deleted by hand, or lost):
  a round found nothing to fire. Checked here, in one step, so a schedule created with that id
  since the round read it is kept.

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id

  Returns:
    1 removed, 0 the schedule exists (nothing written)
]]
local key, due = KEYS[1], KEYS[2]
if redis.call('EXISTS', key) == 1 then
  return 0
end
redis.call('ZREM', due, ARGV[1])
return 1
