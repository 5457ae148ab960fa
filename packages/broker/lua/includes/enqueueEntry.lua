--- @include "makeGroup"
-- Adds a queue entry for the task named `name` (its id within the queue) to lane number `lane` of
-- `lanes` (a queue's lane keys in script order, or { key } and 1 for a single lane); an entry holds
-- nothing else. A lane that does not exist (Redis lost its data: the stream went with its consumer
-- group) is made first, with the group, and so is every other lane of `lanes` that lacks one, so
-- workers read the entry. Returns the entry id, and true when it made the lanes.
local function enqueueEntry(lanes, lane, group, name)
  local id = redis.call('XADD', lanes[lane], 'NOMKSTREAM', '*', 'task', name)
  if id then
    return id, false
  end
  for _, key in ipairs(lanes) do
    makeGroup(key, group)
  end
  return redis.call('XADD', lanes[lane], '*', 'task', name), true
end
