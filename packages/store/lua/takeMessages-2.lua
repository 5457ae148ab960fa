#!lua
--[[
  A running attempt takes every message waiting in its task's inbox, at a turn boundary: they leave
  the inbox and the record's count. Fenced: only the attempt that runs the task takes them. Replay-
  safe: `takeId` names the take, and a resend of the last take (its reply lost) returns the same
  messages again rather than none.

  Input:
    KEYS[1] task record
    KEYS[2] the task's inbox
    ARGV[1] attempt
    ARGV[2] takeId ('<attempt>:<n>', increasing per attempt)

  Returns:
    the messages taken, oldest first (JSON texts; none: an empty list); -1 when the task is no
    longer RUNNING as this attempt (nothing taken); the error CORRUPT_RECORD when the record cannot
    be trusted (nothing taken)
]]
--- @include "recordFault"
local TAKE_FIELDS = { 'status', 'attempt', 'lastTake', 'lastTaken' }
local record, inbox = KEYS[1], KEYS[2]
local attempt, takeId = ARGV[1], ARGV[2]
local values = redis.pcall('HMGET', record, unpack(TAKE_FIELDS))
local fault = (values.err or values[1]) and recordFault(TAKE_FIELDS, values)
if fault then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. fault)
end
local status, running, lastTake, lastTaken = unpack(values, 1, #TAKE_FIELDS)
if status ~= 'RUNNING' or running ~= attempt then
  return -1
end
if lastTake == takeId then
  return cjson.decode(lastTaken or '[]')
end
local messages = redis.call('LRANGE', inbox, 0, -1)
redis.call('DEL', inbox)
redis.call('HDEL', record, 'inbox')
-- Kept for a resend of this take only: the next take replaces it.
redis.call('HSET', record, 'lastTake', takeId, 'lastTaken', cjson.encode(messages))
return messages
