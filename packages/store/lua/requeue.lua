-- Sends a dead-lettered task back to its lane for another run, in one step: the FAILED record
-- returns to PENDING (retries reset, a fresh delivery allowance, its events start afresh while seq
-- carries on), the dead letter is deleted and a new entry is added.
-- KEYS: task, events stream, lane, dead letters
-- ARGV: dead-letter id, task name
-- Returns {'ok'}, {'gone'} (no such dead letter) or {'refused', status}.
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt')
if not h[1] then
  return { 'refused', '' }
end
if h[1] ~= 'FAILED' and h[1] ~= 'PENDING' then
  return { 'refused', h[1] }
end
if redis.call('XDEL', KEYS[4], ARGV[1]) == 0 then
  -- PENDING: re-queued already (this is a resend, or another caller was first).
  return { h[1] == 'PENDING' and 'ok' or 'gone' }
end
if h[1] == 'FAILED' then
  redis.call('HDEL', KEYS[1], 'error', 'result', 'completedAt', 'durationMs', 'retryAt', 'log')
  redis.call('HSET', KEYS[1], 'status', 'PENDING', 'retries', 0, 'deliveriesBase', h[2] or 0)
  redis.call('DEL', KEYS[2])
  redis.call('PERSIST', KEYS[1])
end
redis.call('XADD', KEYS[3], '*', 'task', ARGV[2])
return { 'ok' }
