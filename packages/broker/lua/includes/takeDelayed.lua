-- Takes the task named `name` out of a lane's delayed set before it falls due (a signal came for a
-- task that waits with a timeout). Returns true when it was there; false when it had fallen due and
-- promotion moved it into the lane already.
local function takeDelayed(delayed, name)
  return redis.call('ZREM', delayed, name) == 1
end
