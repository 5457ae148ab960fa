-- A worker starts an attempt on a task it claimed from the queue.
-- KEYS: task, events stream, events channel, done channel
-- ARGV: workerId, now, eventMaxLen, eventTtlMs, recordTtlMs
-- Returns {'run', attempt, payload, timeoutMs, detailed, metadata, agent} or {'skip', reason, status}.
--@include "cancel"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'cancelRequestedAt', 'createdAt', 'agent', 'payload',
  'taskId', 'cancelReason', 'timeoutMs', 'detailed', 'waitMs', 'metadata')
local status = h[1]
if not status then
  return { 'skip', 'missing', '' }
end
if TERMINAL[status] then
  return { 'skip', 'terminal', status }
end
if status == 'RUNNING' then
  return { 'skip', 'running', status }
end
local now = tonumber(ARGV[2])
if h[3] then
  -- Cancel was stored while it waited: end it here, never run it.
  cancelWaiting(KEYS[1], KEYS[2], KEYS[3], KEYS[4], h[7], h[2], h[5], h[8] or 'cancelled', now,
    ARGV[3], ARGV[4], ARGV[5])
  return { 'skip', 'cancelled', 'CANCELLED' }
end
local attempt = tonumber(h[2]) + 1
redis.call('HSET', KEYS[1], 'status', 'RUNNING', 'attempt', attempt, 'workerId', ARGV[1], 'startedAt', now)
if not h[11] then
  redis.call('HSET', KEYS[1], 'waitMs', now - tonumber(h[4]))
end
appendEvents(KEYS[1], KEYS[2], KEYS[3],
  { statusEvent('RUNNING', h[7], attempt, h[5], now, { workerId = ARGV[1] }) }, ARGV[3], ARGV[4])
return { 'run', attempt, h[6], h[9] or '', h[10], h[12] or '{}', h[5] }
