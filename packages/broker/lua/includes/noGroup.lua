-- For the reply of a redis.pcall that reads a lane through its consumer group: true when it failed
-- because the lane or its group does not exist (NOGROUP: Redis lost its data, or the queue was never
-- set up), false when it did not fail. Any other error is raised as it was.
local function noGroup(reply)
  if type(reply) ~= 'table' or not reply.err then
    return false
  end
  if string.sub(reply.err, 1, 8) == 'NOGROUP ' then
    return true
  end
  error(reply)
end
