#!lua flags=allow-oom
--[[
  Closes a graph node task's name before its task exists. A run that ended (cancelled, or failed)
  while one of its instances was made but its task not yet created leaves a CANCELLED record under
  that task's name, holding the run's id as its submitId: the create that comes later (the hand-off
  that made the instance, or a sweeper finishing it) finds the name taken by its own submitId and
  creates nothing (see @flotilla/store's create-8.lua), so the node never runs. One step in the
  task's slot: no create can come between the check and the write. A name that holds anything is
  left as it is: its task exists, and the caller cancels it (cancel-2.lua). Runs on a full Redis too:
  a cancel must not be refused for want of memory.

  Input:
    KEYS[1] the task's record
    ARGV[1] task id
    ARGV[2] queue
    ARGV[3] agent (the node's type)
    ARGV[4] submitId (the run's id: what every create of the instance's task carries)
    ARGV[5] reason
    ARGV[6] metadata (JSON)
    ARGV[7] the record's time to live (ms)
    ARGV[8] now (ms; '' for Redis's clock)

  Returns:
    'closed' (the CANCELLED record written), or 'exists' (the name holds a key: nothing written)
]]
--- @include "@flotilla/broker/redisNow"
local key = KEYS[1]
local taskId, queue, agent, submitId, reason, metadata, ttlMs = unpack(ARGV, 1, 7)
if redis.call('EXISTS', key) == 1 then
  return 'exists'
end
local now = redisNow(ARGV[8])
redis.call('HSET', key, 'taskId', taskId, 'queue', queue, 'agent', agent, 'status', 'CANCELLED', 'createdAt', now, 'completedAt', now,
  'error', cjson.encode({ message = reason, code = 'CANCELLED' }), 'cancelRequestedAt', now, 'cancelReason', reason, 'submitId', submitId,
  'metadata', metadata)
redis.call('PEXPIRE', key, ttlMs)
return 'closed'
