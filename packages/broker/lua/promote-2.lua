#!lua flags=allow-oom
--[[
  Moves the tasks of a lane's delayed set that are due into the lane, atomically; any live worker
  may run it (there is no scheduler process).

  Input:
    KEYS[1] lane
    KEYS[2] the lane's delayed set
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] most to move in this call
    ARGV[3] consumer group (for a lane that must be made again: see includes/enqueueEntry.lua)

  Returns:
    { moved, ms from now until the next is due (0 when overdue) or '' }: a delay, not a time, so
    the caller's own clock may differ from Redis's
]]
--- @include "redisNow"
--- @include "enqueueEntry"
local lane, delayed = KEYS[1], KEYS[2]
local now, max, group = redisNow(ARGV[1]), ARGV[2], ARGV[3]
local due = redis.call('ZRANGE', delayed, '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
for _, name in ipairs(due) do
  enqueueEntry({ lane }, 1, group, name)
end
if #due > 0 then
  redis.call('ZREM', delayed, unpack(due))
end
local nextDue = redis.call('ZRANGE', delayed, 0, 0, 'WITHSCORES')
return { #due, nextDue[2] and math.max(0, tonumber(nextDue[2]) - now) or '' }
