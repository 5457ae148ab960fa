--- @include "hsetAll"
--- @include "statusEvent"
--- @include "countStat"
--- @include "noteHandoff"
-- Ends a task that is not running (PENDING or RETRYING, or running on a worker that died) as
-- CANCELLED, with its terminal event, and counts it in the fleet statistics. `seq`, `log` and
-- `handoff`: the record's as read.
local function cancelWaiting(batch, key, taskId, attempt, agent, reason, seq, log, handoff)
  local errText = cjson.encode({ message = reason, code = 'CANCELLED' })
  hsetAll(key, { 'status', 'CANCELLED', 'completedAt', batch.nowText, 'error', errText },
    statusEvent(batch, 'CANCELLED', taskId, attempt, agent, seq, log, ',"error":' .. errText))
  redis.call('PEXPIRE', key, batch.recordTtlMs)
  countStat(batch, 'cancelled')
  noteHandoff(batch.nowText, key, taskId, handoff or false)
end
