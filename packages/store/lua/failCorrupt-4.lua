#!lua flags=allow-oom
--[[
  Takes a task whose record cannot be trusted (see includes/recordFault.lua) out of its queue, in
  one step: the entry this consumer holds is dead-lettered with the reason and acknowledged, the
  record's small fields kept in the letter as they were (for inspection), and, when the key is a
  hash whose status is not terminal, the record ends FAILED with code CORRUPT_RECORD and its status
  event is published, so `result()` waiters hear the outcome. Fenced: only the consumer holding the
  entry may.

  Input:
    KEYS[1] lane (the stream the entry is in)
    KEYS[2] dead letters
    KEYS[3] task record
    KEYS[4] statistics bucket
    ARGV[1] consumer group
    ARGV[2] consumer
    ARGV[3] entry id
    ARGV[4] reason
    ARGV[5] now (ms; '' for Redis's clock)
    ARGV[6] task id (`<queue>/<name>`, checked by the caller)
    ARGV[7] dead letters kept (approximate trim)
    ARGV[8] recordTtlMs
    ARGV[9] status channel
    ARGV[10] lane name (high | normal | low)

  Returns:
    { moved (1 | 0: the entry is not this consumer's), failed (1 | 0: the record was ended FAILED) }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "@flotilla/broker/ownedBy"
--- @include "@flotilla/broker/addDeadLetter"
--- @include "@flotilla/broker/queueAck"
--- @include "newBatch"
--- @include "isTerminal"
--- @include "hsetAll"
--- @include "statusEvent"
--- @include "countStat"
--- @include "recordFault"
--- @include "finish"
--- @include "noteHandoff"
-- The fields a letter keeps as they were: every one a script checks, none of the big ones.
local KEPT = { 'taskId', 'status', 'attempt', 'createdAt', 'startedAt', 'seq', 'maxDeliveries', 'deliveriesBase',
  'retries', 'maxRetries', 'timeoutMs', 'cancelRequestedAt', 'waitMs', 'agent', 'workerId', 'entryId', 'log' }
local KEPT_MAX_CHARS = 200
local lane, deadLetters, record, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, consumer, entryId, reason, now, taskId, maxLen, recordTtlMs, statusChannel, laneName = unpack(ARGV, 1, 10)
now = redisNow(now)
if not ownedBy(lane, group, entryId, consumer) then
  return { 0, 0 }
end
local keyType = redis.call('TYPE', record)['ok']
local kept = {}
local values = {}
if keyType == 'hash' then
  values = redis.call('HMGET', record, unpack(KEPT))
  for i, field in ipairs(KEPT) do
    if values[i] then
      kept[field] = string.sub(values[i], 1, KEPT_MAX_CHARS)
    end
  end
end
local extra = cjson.encode({ priority = laneName, keyType = keyType, record = kept })
addDeadLetter(deadLetters, maxLen, entryId, reason, cjson.encode({ task = string.match(taskId, '/(.*)$') }), now, taskId,
  extra)
local batch = newBatch({ lane }, group, consumer, now, '', recordTtlMs)
queueAck(batch, 1, entryId)
local failed = 0
if keyType == 'hash' and not isTerminal(values[2]) then
  -- Its waiters are told. The fields the event needs are taken only when sound: a bad seq or log
  -- starts the record's events afresh (the letter keeps what they were).
  local function sound(field, value)
    return value and not recordFault({ field }, { value }) and value or nil
  end
  local seq, log, attempt = sound('seq', values[6]), values[17], sound('attempt', values[3]) or '0'
  if not seq or (log and not sound('log', log)) then
    seq, log = nil, nil
  end
  local errText = cjson.encode({ message = reason, code = 'CORRUPT_RECORD' })
  hsetAll(record, { 'status', 'FAILED', 'completedAt', now, 'error', errText },
    statusEvent(batch, 'FAILED', taskId, attempt, values[14] or '', seq, log, ',"error":' .. errText))
  redis.call('PEXPIRE', record, recordTtlMs)
  countStat(batch, 'failed')
  noteHandoff(now, record, taskId)
  failed = 1
end
finish(batch, statsKey, statusChannel)
return { 1, failed }
