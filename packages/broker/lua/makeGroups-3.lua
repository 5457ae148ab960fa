#!lua flags=allow-oom
--[[
  Makes the consumer group of each of a queue's lanes that lacks one (and the lane), in one step:
  what a worker does for its queues at start, and again when a read met NOGROUP (Redis lost its
  data); what a client does for a queue before its first submit.

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    ARGV[1] consumer group

  Returns:
    the number of lanes
]]
--- @include "makeGroup"
local group = ARGV[1]
for _, lane in ipairs(KEYS) do
  makeGroup(lane, group)
end
return #KEYS
