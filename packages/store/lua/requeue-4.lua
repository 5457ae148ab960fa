#!lua
--[[
  Sends a dead-lettered task back to its lane for another run, in one step: the FAILED record
  returns to PENDING (retries reset, a fresh delivery allowance, a stale cancel request dropped, its
  events start afresh while seq carries on), the dead letter is deleted and a new entry is added.

  Input:
    KEYS[1] task record
    KEYS[2] task event stream
    KEYS[3] lane
    KEYS[4] dead letters
    ARGV[1] dead letter id
    ARGV[2] task name
    ARGV[3] consumer group (for a lane that must be made again: see @flotilla/broker/enqueueEntry)

  Returns:
    { 'ok' }; { 'gone' } (no such dead letter); { 'refused', status } (the task is not FAILED); the
    error CORRUPT_RECORD when the record cannot be trusted (see includes/recordFault.lua): nothing written
]]
--- @include "@flotilla/broker/enqueueEntry"
--- @include "@flotilla/broker/removeDeadLetter"
--- @include "recordFault"
local record, stream, lane, deadLetters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadLetterId, name, group = ARGV[1], ARGV[2], ARGV[3]
local values = redis.pcall('HMGET', record, 'status', 'attempt')
local fault = (values.err or values[1]) and recordFault({ 'status', 'attempt' }, values)
if fault then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. fault)
end
local status, attempt = values[1], values[2]
if not status then
  return { 'refused', '' }
end
if status ~= 'FAILED' and status ~= 'PENDING' then
  return { 'refused', status }
end
if removeDeadLetter(deadLetters, deadLetterId) == 0 then
  -- PENDING: re-queued already (this is a resend, or another caller was first).
  return { status == 'PENDING' and 'ok' or 'gone' }
end
if status == 'FAILED' then
  -- A cancel requested while the failed attempt ran belonged to that run: a requeue is the operator's
  -- explicit wish to run the task again, so the claim must not cancel it with the old reason.
  redis.call('HDEL', record, 'error', 'result', 'completedAt', 'durationMs', 'retryAt', 'log', 'cancelRequestedAt', 'cancelReason')
  redis.call('HSET', record, 'status', 'PENDING', 'retries', 0, 'deliveriesBase', attempt or 0)
  redis.call('DEL', stream)
  redis.call('PERSIST', record)
end
enqueueEntry({ lane }, 1, group, name)
return { 'ok' }
