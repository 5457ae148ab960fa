#!lua
--[[
  Sends a signal to a WAITING task, from any process: the signal is kept on the record, the task goes
  back to PENDING (a `pending` status event naming the signal) and its entry returns to its lane, so
  any worker resumes it. Only the signal it waits for is taken, and only once.

  Input:
    KEYS[1] task record
    KEYS[2..4] its queue's lanes: high, normal, low
    KEYS[5..7] their delayed sets: high, normal, low
    ARGV[1] signal name
    ARGV[2] payload (JSON text, checked by the caller)
    ARGV[3] now (ms; '' for Redis's clock)
    ARGV[4] consumer group (for a lane that must be made again: see @flotilla/broker/enqueueEntry)
    ARGV[5] status channel of the task's queue

  Returns:
    { 'ok' }; { 'missing' }; { 'not-waiting', status, the signal it waits for ('' when it waits for
    none) }; the error CORRUPT_RECORD when the record cannot be trusted (nothing written)
]]
--- @include "@flotilla/broker/enqueueEntry"
--- @include "@flotilla/broker/takeDelayed"
--- @include "newBatch"
--- @include "recordFault"
--- @include "hsetAll"
--- @include "jsonString"
--- @include "statusEvent"
--- @include "publishStatus"
local SIGNAL_FIELDS = { 'status', 'waiting', 'priority', 'taskId', 'attempt', 'agent', 'seq', 'log' }
local record = KEYS[1]
local signal, payload, now, group, statusChannel = unpack(ARGV, 1, 5)
local values = redis.pcall('HMGET', record, unpack(SIGNAL_FIELDS))
local fault = (values.err or values[1]) and recordFault(SIGNAL_FIELDS, values)
if fault then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. fault)
end
local status, waiting, priority, taskId, attempt, agent, seq, log = unpack(values, 1, #SIGNAL_FIELDS)
if not status then
  return { 'missing' }
end
local ok, wait = pcall(cjson.decode, waiting or '')
if status ~= 'WAITING' or not ok or type(wait) ~= 'table' or type(wait.name) ~= 'string' then
  return { 'not-waiting', status, '' }
end
if wait.name ~= signal then
  return { 'not-waiting', status, wait.name }
end
local batch = newBatch({}, '', '', now, '', '')
local delivery = '{"name":' .. jsonString(signal) .. ',"payload":' .. payload .. ',"at":' .. batch.now .. '}'
redis.call('HDEL', record, 'waiting')
hsetAll(record, { 'status', 'PENDING', 'signal', delivery },
  statusEvent(batch, 'PENDING', taskId, attempt or 0, agent, seq, log, ',"signal":' .. jsonString(signal)))
local lane = priority == 'high' and 1 or (priority == 'low' and 3 or 2)
-- The task's name in its queue (its entries and delayed member hold it): recordFault vouched for the id.
local name = string.match(taskId, '/(.+)$')
local lanes = { KEYS[2], KEYS[3], KEYS[4] }
-- With a timeout, its entry waits in the delayed set: take it from there. Gone from there, it is in
-- the lane already (the timeout fell due just now): the start reads the signal all the same.
if type(wait.timeoutAt) ~= 'number' or takeDelayed(KEYS[4 + lane], name) then
  enqueueEntry(lanes, lane, group, name)
end
publishStatus(batch, statusChannel)
return { 'ok' }
