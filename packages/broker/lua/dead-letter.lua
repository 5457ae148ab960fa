-- Moves a queue entry this consumer owns to the queue's dead-letter stream with the reason, and
-- acknowledges it, in one step.
-- KEYS: queue stream, dead-letter stream
-- ARGV: group, entryId, reason, fields (JSON), now, taskId|'', maxLen, extra (JSON), consumer
--@include "owner"
if not ownedBy(KEYS[1], ARGV[1], ARGV[2], ARGV[9]) then
  return 0
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[7], '*',
  'entryId', ARGV[2], 'reason', ARGV[3], 'fields', ARGV[4], 'at', ARGV[5], 'taskId', ARGV[6], 'extra', ARGV[8])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return 1
