-- Adds a queue entry for the task named `name` (its id within the queue) to a lane; an entry holds
-- nothing else. Returns the entry id.
local function enqueueEntry(lane, name)
  return redis.call('XADD', lane, '*', 'task', name)
end
