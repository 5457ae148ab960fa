-- Puts an entry this consumer owns back for a later attempt, in one step: the task id goes to the
-- queue's delayed set, due at `dueAt`, and the entry is acknowledged and deleted. Never "ack, then
-- re-add" as two steps, so a crash cannot lose the task in between.
-- KEYS: queue stream, delayed set
-- ARGV: group, consumer, entryId, taskId, dueAt
--@include "owner"
if not ownedBy(KEYS[1], ARGV[1], ARGV[3], ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[3])
return 1
