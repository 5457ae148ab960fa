--- @include "runEvent"
-- Ends a run: its status (SUCCEEDED, FAILED or CANCELLED), end time and error, and its terminal
-- event. The caller then gives its keys their time to live (expireRun), after its last write.
local function endRun(run, status, errText)
  local fields = { 'status', status, 'endedAt', run.now }
  if errText then
    fields[#fields + 1] = 'error'
    fields[#fields + 1] = errText
  end
  redis.call('HSET', run.key, unpack(fields))
  runEvent(run, 'run-finished', { 'status', status, 'error', errText or '' })
end
