-- Cancels a task. Stored first (so a worker that claims it later never runs it), then:
-- a waiting task ends CANCELLED at once; a running one is announced on the fleet's cancel channel.
-- KEYS: task
-- ARGV: reason, now, recordTtlMs, cancelChannel, statusChannel
-- Returns {outcome, status}: 'cancelled' | 'requested' | 'finished' | 'missing'.
--@include "cancel"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'agent', 'taskId', 'seq', 'log')
if not h[1] then
  return { 'missing', '' }
end
if TERMINAL[h[1]] then
  return { 'finished', h[1] }
end
local now = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'cancelRequestedAt', now, 'cancelReason', ARGV[1])
if h[1] == 'RUNNING' then
  redis.call('PUBLISH', ARGV[4], cjson.encode({ taskId = h[4], reason = ARGV[1] }))
  return { 'requested', 'RUNNING' }
end
cancelWaiting(KEYS[1], h[4], h[2] or 0, h[3], ARGV[1], now, h[5], h[6], ARGV[3])
publishStatus(ARGV[5])
return { 'cancelled', 'CANCELLED' }
