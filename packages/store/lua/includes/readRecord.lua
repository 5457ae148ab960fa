--- @include "fieldFault"
-- Reads a whole task record (HGETALL: one pass over the hash, only the fields it has) into a table
-- of field → value, checked as recordFault checks one read by HMGET. Returns the table (empty
-- when there is no record), or nil and why it cannot be trusted.
-- Why HGETALL: a start needs most of a record, and an HMGET of the ~30 fields a start may need looks
-- each one up (a listpack is searched from its start for each) and hands back a reply for each,
-- most of them absent.
local function readRecord(key)
  local values = redis.pcall('HGETALL', key)
  if values.err then
    return nil, 'the key is not a hash (' .. (string.match(values.err, '^%S+') or 'error') .. ')'
  end
  local record = {}
  for i = 1, #values, 2 do
    local name, value = values[i], values[i + 1]
    local fault = fieldFault(name, value)
    if fault then
      return nil, fault
    end
    record[name] = value
  end
  if #values > 0 and not record.taskId and record.status ~= 'COMPLETED' then
    -- Status events splice the task id in; a completed task's record is packed, its taskId in 'z'.
    return nil, 'taskId is missing'
  end
  return record
end
