-- Brings a FAILED task back to PENDING for another run (a re-queued dead letter). Its event stream
-- starts afresh (seq carries on), its retries reset, and it gets its delivery allowance again.
-- KEYS: task, events stream
-- ARGV: pendingTtlMs
-- Returns {'ok'} or {'refused', status}.
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'deliveryAllowance')
if not h[1] then
  return { 'refused', '' }
end
if h[1] == 'PENDING' then
  return { 'ok' }
end
if h[1] ~= 'FAILED' then
  return { 'refused', h[1] }
end
redis.call('HDEL', KEYS[1], 'error', 'result', 'completedAt', 'durationMs', 'retryAt')
redis.call('HSET', KEYS[1], 'status', 'PENDING', 'retries', 0,
  'maxDeliveries', tonumber(h[2]) + tonumber(h[3] or '3'))
redis.call('DEL', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return { 'ok' }
