--- @include "runEvent"
-- Ends a run: its status (SUCCEEDED, FAILED or CANCELLED), end time and error, its terminal event,
-- and a time to live (`run.ttlMs`) on every key of the run, so nothing of it stays behind.
local function endRun(run, status, errText)
  local fields = { 'status', status, 'endedAt', run.now }
  if errText then
    fields[#fields + 1] = 'error'
    fields[#fields + 1] = errText
  end
  redis.call('HSET', run.key, unpack(fields))
  runEvent(run, 'run-finished', { 'status', status, 'error', errText or '' })
  for _, key in ipairs(run.keys) do
    redis.call('PEXPIRE', key, run.ttlMs)
  end
end
