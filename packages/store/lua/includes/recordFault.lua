--- @include "fieldFault"
-- Why a task record a script read cannot be trusted, or false when it can. A record may have been
-- written straight into Redis by a buggy or hostile producer: every script checks the fields it
-- reads with this (or readRecord) before it writes anything, so a bad record is refused (or taken
-- out of its batch) whole instead of raising half-way through a call. `names`: the fields read, in
-- order; `values`: what a redis.pcall of HMGET gave for them (an error reply when the key is no hash).
local function recordFault(names, values)
  if values.err then
    return 'the key is not a hash (' .. (string.match(values.err, '^%S+') or 'error') .. ')'
  end
  local packed = false
  for i = 1, #names do
    local name, value = names[i], values[i]
    if value then
      local fault = fieldFault(name, value)
      if fault then
        return fault
      end
      packed = packed or (name == 'status' and value == 'COMPLETED')
    end
  end
  for i = 1, #names do
    -- Status events splice the task id in: a record without one (read for it) is not ours, unless
    -- it completed: a completed task's record is packed (see packRecord), its taskId in 'z' then.
    if names[i] == 'taskId' and not values[i] and not packed then
      return 'taskId is missing'
    end
  end
  return false
end
