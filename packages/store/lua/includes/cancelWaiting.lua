--- @include "hsetAll"
--- @include "statusEvent"
--- @include "countStat"
-- Ends a task that is not running (PENDING or RETRYING, or running on a worker that died) as
-- CANCELLED, with its terminal event, and counts it in the fleet statistics. `seq` and `log`: the
-- record's as read.
local function cancelWaiting(batch, key, taskId, attempt, agent, reason, seq, log)
  local errText = cjson.encode({ message = reason, code = 'CANCELLED' })
  hsetAll(key, { 'status', 'CANCELLED', 'completedAt', batch.now, 'error', errText },
    statusEvent(batch, 'CANCELLED', taskId, attempt, agent, seq, log, ',"error":' .. errText))
  redis.call('PEXPIRE', key, batch.recordTtlMs)
  countStat(batch, 'cancelled')
end
