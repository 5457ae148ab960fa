#!lua flags=allow-oom
--[[
  Cancels a task. The request is stored on the record first (so a worker that claims the task later
  never runs it), then: a waiting task ends CANCELLED at once, counted in the fleet statistics; a
  running one is announced on the fleet's cancel channel, for its worker to abort.

  Input:
    KEYS[1] task record
    KEYS[2] statistics bucket of the task's queue
    ARGV[1] reason
    ARGV[2] now (ms; '' for Redis's clock)
    ARGV[3] recordTtlMs
    ARGV[4] cancel channel
    ARGV[5] status channel of the task's queue

  Returns:
    { outcome, status }: outcome 'cancelled' | 'requested' | 'finished' | 'missing'; the error
    CORRUPT_RECORD when the record cannot be trusted (see @flotilla/store/recordFault): nothing written
]]
--- @include "@flotilla/store/newBatch"
--- @include "@flotilla/store/requestCancel"
--- @include "@flotilla/store/finish"
local record, statsKey = KEYS[1], KEYS[2]
local reason, now, recordTtlMs, cancelChannel, statusChannel = unpack(ARGV, 1, 5)
local batch = newBatch({}, '', '', now, '', recordTtlMs)
local outcome, status, taskId = requestCancel(batch, record, reason)
if outcome == 'corrupt' then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. status)
end
if outcome == 'requested' then
  redis.call('SPUBLISH', cancelChannel, cjson.encode({ taskId = taskId, reason = reason }))
end
finish(batch, statsKey, statusChannel)
return { outcome, status }
