-- Notes the end of a graph node task in its queue's hand-off set, in the same step that ends it, so
-- its run hears of the end even when the worker that ran it dies before telling the run (a live
-- worker's sweeper finishes the hand-off; see @flotilla/graph). Only records created with the
-- `handoff` flag are noted; a plain task costs nothing here.
-- The set is the queue's `{prefix}:queue:{q}:handoff` (keys.handoff), built from the record's own
-- key `{prefix}:task:{q}:<name>`: same prefix, same hash tag, so the same slot.
-- `flag`: the record's handoff field when already read (false when absent); nil reads it here.
-- Members are task ids, scored by when they ended (ms).
local function noteHandoff(now, key, taskId, flag)
  if flag == nil then
    flag = redis.pcall('HGET', key, 'handoff')
  end
  if flag ~= '1' then
    return
  end
  local prefix, tag = string.match(key, '^(.-):task:(%b{}):')
  if prefix then
    redis.call('ZADD', prefix .. ':queue:' .. tag .. ':handoff', now, taskId)
  end
end
