--- @include "isTerminal"
--- @include "cancelWaiting"
--- @include "recordFault"
-- Stores a cancel request on a task (so a worker that claims it later never runs it). A waiting
-- task ends CANCELLED at once; a running one is left to its worker, whom the caller tells.
-- Returns outcome ('cancelled' | 'requested' | 'finished' | 'missing'), the status, and the task id;
-- or 'corrupt' and why, when the record cannot be trusted (nothing written).
local CANCEL_FIELDS = { 'status', 'attempt', 'agent', 'taskId', 'seq', 'log', 'handoff' }
local function requestCancel(batch, key, reason)
  local values = redis.pcall('HMGET', key, unpack(CANCEL_FIELDS))
  local fault = (values.err or values[1]) and recordFault(CANCEL_FIELDS, values)
  if fault then
    return 'corrupt', fault, ''
  end
  local status, attempt, agent, taskId, seq, log, handoff = unpack(values, 1, #CANCEL_FIELDS)
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
  cancelWaiting(batch, key, taskId, attempt or 0, agent, reason, seq, log, handoff)
  return 'cancelled', 'CANCELLED', taskId
end
