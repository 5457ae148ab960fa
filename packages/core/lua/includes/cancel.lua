-- Ends a task that is not running (PENDING or RETRYING) as CANCELLED, with its terminal event.
--@include "events"
local function cancelWaiting(taskKey, streamKey, channel, doneChannel, taskId, attempt, agent, reason, now,
                             maxLen, ttlMs, recordTtlMs)
  local err = { message = reason, code = 'CANCELLED' }
  redis.call('HSET', taskKey, 'status', 'CANCELLED', 'completedAt', now, 'error', cjson.encode(err))
  appendEvents(taskKey, streamKey, channel,
    { statusEvent('CANCELLED', taskId, attempt, agent, now, { error = err }) }, maxLen, ttlMs)
  redis.call('PUBLISH', doneChannel, 'CANCELLED')
  redis.call('PEXPIRE', taskKey, recordTtlMs)
end
