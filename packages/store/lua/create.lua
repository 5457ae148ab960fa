-- Creates a task record in PENDING, unless one with that id exists.
-- KEYS: task, events stream
-- ARGV: taskId, queue, agent, payload, createdAt, detailed(0|1), maxRetries, timeoutMs|'', metadata, pendingTtlMs,
--       maxDeliveries, backoff (JSON)|'', runAt|'', priority, submitId (a resent create of the same submit
--       must not read as a duplicate id)
-- Returns 1 when created, 0 when the id is taken.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HGET', KEYS[1], 'submitId') == ARGV[15] and 1 or 0
end
-- A stream left from an expired task of the same id would clash with the new seq numbering.
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'taskId', ARGV[1], 'queue', ARGV[2], 'agent', ARGV[3], 'payload', ARGV[4],
  'createdAt', ARGV[5], 'detailed', ARGV[6], 'maxRetries', ARGV[7], 'metadata', ARGV[9],
  'status', 'PENDING', 'attempt', 0, 'retries', 0, 'seq', 0, 'maxDeliveries', ARGV[11],
  'deliveryAllowance', ARGV[11], 'priority', ARGV[14], 'submitId', ARGV[15])
if ARGV[12] ~= '' then
  redis.call('HSET', KEYS[1], 'backoff', ARGV[12])
end
if ARGV[13] ~= '' then
  redis.call('HSET', KEYS[1], 'runAt', ARGV[13])
end
if ARGV[8] ~= '' then
  redis.call('HSET', KEYS[1], 'timeoutMs', ARGV[8])
end
redis.call('PEXPIRE', KEYS[1], ARGV[10])
return 1
