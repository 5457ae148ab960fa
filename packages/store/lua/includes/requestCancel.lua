--- @include "isTerminal"
--- @include "cancelWaiting"
-- Stores a cancel request on a task (so a worker that claims it later never runs it). A waiting
-- task ends CANCELLED at once; a running one is left to its worker, whom the caller tells.
-- Returns outcome ('cancelled' | 'requested' | 'finished' | 'missing'), the status, and the task id.
local function requestCancel(batch, key, reason)
  local status, attempt, agent, taskId, seq, log = unpack(redis.call('HMGET', key, 'status', 'attempt', 'agent',
    'taskId', 'seq', 'log'))
  if not status then
    return 'missing', '', ''
  end
  if isTerminal(status) then
    return 'finished', status, taskId
  end
  redis.call('HSET', key, 'cancelRequestedAt', batch.now, 'cancelReason', reason)
  if status == 'RUNNING' then
    return 'requested', status, taskId
  end
  cancelWaiting(batch, key, taskId, attempt or 0, agent, reason, seq, log)
  return 'cancelled', 'CANCELLED', taskId
end
