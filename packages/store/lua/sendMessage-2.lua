#!lua
--[[
  Sends a message to a task that has not ended, from any process: it waits in the task's inbox (a
  list in the task's slot) until the task's worker takes it at its next turn boundary, and the
  record counts it ('inbox'), so the worker's next publish reply says one waits. A WAITING or
  PENDING task gets it when it runs again. Replay-safe: the message carries its id, and a resend of
  a message already in the inbox adds nothing.

  Input:
    KEYS[1] task record
    KEYS[2] the task's inbox
    ARGV[1] the message (JSON `{ id, content, at }`, checked by the caller)
    ARGV[2] ttlMs: the inbox expires this long after its last message

  Returns:
    { 'queued', messages waiting }; { 'missing' }; { 'finished', status } for a task that has ended
    (nothing written); the error CORRUPT_RECORD when the record cannot be trusted (nothing written)
]]
--- @include "recordFault"
--- @include "isTerminal"
local SEND_FIELDS = { 'status' }
local record, inbox = KEYS[1], KEYS[2]
local message, ttlMs = ARGV[1], ARGV[2]
local values = redis.pcall('HMGET', record, unpack(SEND_FIELDS))
local fault = (values.err or values[1]) and recordFault(SEND_FIELDS, values)
if fault then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. fault)
end
local status = values[1]
if not status then
  return { 'missing' }
end
if isTerminal(status) then
  return { 'finished', status }
end
if not redis.call('LPOS', inbox, message) then
  redis.call('RPUSH', inbox, message)
  redis.call('HINCRBY', record, 'inbox', 1)
end
redis.call('PEXPIRE', inbox, ttlMs)
return { 'queued', redis.call('LLEN', inbox) }
