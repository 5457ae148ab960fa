#!lua flags=allow-oom
--[[
  Gives back entries a consumer read but will not start: a blocking XREADGROUP over several lanes
  returns up to COUNT entries from each lane that holds some, so it can bring more than the worker
  has free slots for. Each entry is acknowledged, deleted and added again at the end of its lane,
  unread, for any worker to claim; nothing of the task's record changes. Only entries still
  delivered to this consumer are given back, so a resend after a lost reply changes nothing, and an
  entry another worker reclaimed in between stays with it. allow-oom: memory is given back as much
  as taken, and refusing would strand the entries until their lease lapsed.

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    ARGV[1] consumer group
    ARGV[2] consumer
    ARGV[3..] per entry (3): lane, entryId, task name

  Returns:
    how many entries were given back
]]
--- @include "ownedBy"
--- @include "enqueueEntry"
local WIDTH = 3
local group, consumer = ARGV[1], ARGV[2]
local lanes = { KEYS[1], KEYS[2], KEYS[3] }
local released = 0
for i = 3, #ARGV, WIDTH do
  local lane, entryId, name = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2]
  if ownedBy(lanes[lane], group, entryId, consumer) then
    redis.call('XACK', lanes[lane], group, entryId)
    redis.call('XDEL', lanes[lane], entryId)
    enqueueEntry(lanes, lane, group, name)
    released = released + 1
  end
end
return released
