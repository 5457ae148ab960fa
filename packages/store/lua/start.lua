-- A worker starts an attempt on a task it claimed from the queue. Every start is a delivery and
-- gets a new attempt number, which fences out whoever ran the task before.
-- KEYS: task, events stream, events channel, done channel
-- ARGV: workerId, now, eventMaxLen, eventTtlMs, recordTtlMs, reclaimed (1: the entry's lease lapsed
--       with its previous holder, who may be dead or frozen: a RUNNING task is taken over), entryId
-- Replay-safe: a client library resends a command whose reply a dropped connection lost; the same
-- worker starting the same entry again gets its attempt back instead of a second one.
-- Returns {'run', attempt, payload, timeoutMs, detailed, metadata, agent, retries, maxRetries, backoff}
-- or {'skip', reason, status}
-- ({'skip', 'dead', 'FAILED', attempts, lastError} when the delivery limit is reached).
--@include "cancel"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'cancelRequestedAt', 'createdAt', 'agent', 'payload',
  'taskId', 'cancelReason', 'timeoutMs', 'detailed', 'waitMs', 'metadata', 'maxDeliveries', 'workerId', 'error',
  'retries', 'maxRetries', 'backoff', 'entryId')
local status = h[1]
if not status then
  return { 'skip', 'missing', '' }
end
if TERMINAL[status] then
  return { 'skip', 'terminal', status }
end
local function runReply(attempt)
  return { 'run', attempt, h[6], h[9] or '', h[10], h[12] or '{}', h[5], h[16] or '0', h[17] or '0', h[18] or '' }
end
if status == 'RUNNING' and ARGV[6] ~= '1' and h[14] == ARGV[1] and h[19] == ARGV[7] then
  return runReply(tonumber(h[2]))
end
if status == 'RUNNING' and ARGV[6] ~= '1' then
  -- A second entry for a task that is running under a live lease.
  return { 'skip', 'running', status }
end
local now = tonumber(ARGV[2])
if h[3] then
  -- Cancel was stored while it waited: end it here, never run it.
  cancelWaiting(KEYS[1], KEYS[2], KEYS[3], KEYS[4], h[7], h[2], h[5], h[8] or 'cancelled', now,
    ARGV[3], ARGV[4], ARGV[5])
  return { 'skip', 'cancelled', 'CANCELLED' }
end
local attempts = tonumber(h[2])
local maxDeliveries = tonumber(h[13] or '0')
if maxDeliveries > 0 and attempts >= maxDeliveries then
  local err = { message = 'gave up after ' .. attempts .. ' deliveries (maxDeliveries ' .. maxDeliveries .. ')',
    code = 'DELIVERY_LIMIT' }
  redis.call('HSET', KEYS[1], 'status', 'FAILED', 'completedAt', now, 'error', cjson.encode(err))
  appendEvents(KEYS[1], KEYS[2], KEYS[3], { statusEvent('FAILED', h[7], attempts, h[5], now, { error = err }) },
    ARGV[3], ARGV[4])
  redis.call('PUBLISH', KEYS[4], 'FAILED')
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return { 'skip', 'dead', 'FAILED', attempts, h[15] or '' }
end
local attempt = attempts + 1
redis.call('HSET', KEYS[1], 'status', 'RUNNING', 'attempt', attempt, 'workerId', ARGV[1], 'startedAt', now,
  'entryId', ARGV[7])
if not h[11] then
  redis.call('HSET', KEYS[1], 'waitMs', now - tonumber(h[4]))
end
local extra = { workerId = ARGV[1] }
if status == 'RUNNING' then
  extra.takenOverFrom = h[14]
end
appendEvents(KEYS[1], KEYS[2], KEYS[3], { statusEvent('RUNNING', h[7], attempt, h[5], now, extra) }, ARGV[3], ARGV[4])
return runReply(attempt)
