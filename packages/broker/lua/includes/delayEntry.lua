-- Holds the task named `name` back in a lane's delayed set until `dueAt` (ms); promotion moves it
-- into the lane then.
local function delayEntry(delayed, dueAt, name)
  redis.call('ZADD', delayed, dueAt, name)
end
