-- Sends a dead-lettered task back to its queue and removes the dead letter, in one step.
-- KEYS: queue stream, dead-letter stream
-- ARGV: dead-letter id, taskId
if redis.call('XDEL', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('XADD', KEYS[1], '*', 'task', ARGV[2])
return 1
