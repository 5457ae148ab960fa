-- A worker ends its attempt: COMPLETED, FAILED or CANCELLED (terminal) or RETRYING.
-- Fenced: only the worker holding the current attempt of a RUNNING task may write, so a late
-- or stale writer can never overwrite a terminal status nor resurrect a finished task.
-- KEYS: task, events stream, events channel, done channel
-- ARGV: attempt, status, now, result|'', error|'', eventBody, eventMaxLen, eventTtlMs, recordTtlMs, retryAt|'',
--       release (1: a RETRYING that hands the task back unfinished, e.g. at shutdown, and uses up no retry)
-- A RETRYING attempt of a task whose cancel was requested ends it CANCELLED instead.
-- Returns {'ok', status} or {'rejected', reason, currentStatus}.
--@include "cancel"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'startedAt', 'cancelRequestedAt', 'cancelReason', 'taskId',
  'agent')
local current = h[1]
if not current then
  return { 'rejected', 'missing', '' }
end
if current == ARGV[2] and h[2] == ARGV[1] then
  -- The same outcome of the same attempt again: a resend after a lost reply.
  return { 'ok', current }
end
if TERMINAL[current] then
  return { 'rejected', 'terminal', current }
end
if current ~= 'RUNNING' or h[2] ~= ARGV[1] then
  return { 'rejected', 'stale', current }
end
local target = ARGV[2]
local now = tonumber(ARGV[3])
if target == 'RETRYING' and h[4] then
  redis.call('HSET', KEYS[1], 'durationMs', now - tonumber(h[3] or now))
  cancelWaiting(KEYS[1], KEYS[2], KEYS[3], KEYS[4], h[6], h[2], h[7], h[5] or 'cancelled', now, ARGV[7], ARGV[8], ARGV[9])
  return { 'ok', 'CANCELLED' }
end
redis.call('HSET', KEYS[1], 'status', target, 'durationMs', now - tonumber(h[3] or now))
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'result', ARGV[4])
end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'error', ARGV[5])
end
if target == 'RETRYING' then
  if ARGV[11] ~= '1' then
    redis.call('HINCRBY', KEYS[1], 'retries', 1)
  end
  redis.call('HSET', KEYS[1], 'retryAt', ARGV[10])
end
appendEvents(KEYS[1], KEYS[2], KEYS[3], { ARGV[6] }, ARGV[7], ARGV[8])
if TERMINAL[target] then
  redis.call('HSET', KEYS[1], 'completedAt', now)
  redis.call('PUBLISH', KEYS[4], target)
  redis.call('PEXPIRE', KEYS[1], ARGV[9])
end
return { 'ok', target }
