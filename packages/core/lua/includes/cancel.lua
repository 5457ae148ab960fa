-- Ends a task that is not running (PENDING or RETRYING) as CANCELLED, with its terminal event.
-- h: the record's seq and log as read.
--@include "events"
local function cancelWaiting(taskKey, taskId, attempt, agent, reason, now, seq, log, recordTtlMs)
  local errText = cjson.encode({ message = reason, code = 'CANCELLED' })
  hsetAll(taskKey, { 'status', 'CANCELLED', 'completedAt', now, 'error', errText },
    statusEvent('CANCELLED', taskId, attempt, agent, now, seq, log, ',"error":' .. errText))
  redis.call('PEXPIRE', taskKey, recordTtlMs)
end
