--- @include "@flotilla/broker/queueAck"
--- @include "@flotilla/broker/addDeadLetter"
--- @include "isTerminal"
--- @include "hsetAll"
--- @include "jsonString"
--- @include "statusEvent"
--- @include "cancelWaiting"
--- @include "countStat"
--- @include "countWait"
--- @include "readRecord"
--- @include "noteHandoff"
--- @include "concurrencySet"
--- @include "takeConcurrencySlot"
--- @include "releaseConcurrencySlot"
-- Starts the task of a claimed entry. Every start is a delivery and gets a new attempt number,
-- which fences out whoever ran the task before. Entries that must not run are settled here: a
-- finished task's entry, a second entry of a task running under a live lease and a task whose
-- cancel was stored while it waited are acknowledged (see finish). A task past its delivery limit
-- ends FAILED and its entry is dead-lettered and acknowledged in the same call: a worker that dies
-- right after (or a reply lost) cannot leave a DELIVERY_LIMIT failure without its dead letter.
-- Needs batch.deadLetters and batch.deadLetterMaxLen. A missing record goes back to the worker,
-- which dead-letters the entry with the reason (there is no record to fail).
-- Replay-safe: a resent start of the same entry by the same worker gets its attempt back.
-- `reclaimed`: the entry came back after its lease lapsed, so a RUNNING task is taken over.
-- A task of a concurrency key whose slots are all taken is parked instead of started: its entry is
-- acknowledged and its name waits in the key's list (`<set>:waiting`) until a slot frees (see
-- releaseConcurrencySlot); a task parked before goes to the front, so it keeps its place.
-- Adds one reply to batch.replies:
--   { 'run', lane, entryId, name, attempt, payload, agent, waitedMs }, then a field name and its value
--     for each of RUN_OPTIONAL the record holds (timeoutMs, detailed, metadata, retries, maxRetries,
--     backoff, trace, resume: the saved state of a run that stopped to wait for a signal, signal: the
--     one that resumed it, absent when the wait timed out, signature: its creator's HMAC, inbox: how
--     many messages wait in its inbox, sent to it before it started)
--   { 'skip', lane, entryId, name, reason ('terminal' | 'running' | 'cancelled' | 'parked'), status }
--   { 'dead', lane, entryId, name, attempts, lastError, reason }: failed DELIVERY_LIMIT and dead-lettered
--     (with `reason`) by this call
--   { 'missing', lane, entryId, name }
--   { 'corrupt', lane, entryId, name, reason }: the record cannot be trusted (see recordFault)
-- The fields a run reply carries by name, when the record has them (@flotilla/store's
-- RUN_REPLY_OPTIONAL lists the same, a test checks).
local RUN_OPTIONAL = { 'timeoutMs', 'detailed', 'metadata', 'retries', 'maxRetries', 'backoff', 'trace', 'resume', 'signal',
  'signature', 'inbox' }
local LANE_NAMES = { 'high', 'normal', 'low' }
local function startEntry(batch, lane, entryId, name, reclaimed)
  local key = batch.taskBase .. name
  local record, fault = readRecord(key)
  if not record then
    -- Nothing written: the worker dead-letters the entry and fails the record (see failCorrupt-4.lua).
    batch.replies[#batch.replies + 1] = { 'corrupt', lane, entryId, name, fault }
    return
  end
  local status, attempts, cancelRequestedAt, agent, taskId, seq, log, handoff, concurrency =
    record.status, record.attempt, record.cancelRequestedAt, record.agent, record.taskId, record.seq, record.log,
    record.handoff, record.concurrencyKey
  local replies = batch.replies
  local now = batch.now
  if not status then
    replies[#replies + 1] = { 'missing', lane, entryId, name }
    return
  end
  if isTerminal(status) then
    queueAck(batch, lane, entryId)
    replies[#replies + 1] = { 'skip', lane, entryId, name, 'terminal', status }
    return
  end
  local function run(attempt)
    local waitedMs = now - tonumber(record.createdAt or now)
    local reply = { 'run', lane, entryId, name, attempt, record.payload, agent, waitedMs }
    -- Only what the record holds: every element of a script's reply costs Redis a conversion.
    for i = 1, #RUN_OPTIONAL do
      local value = record[RUN_OPTIONAL[i]]
      if value then
        reply[#reply + 1] = RUN_OPTIONAL[i]
        reply[#reply + 1] = value
      end
    end
    replies[#replies + 1] = reply
  end
  if status == 'RUNNING' and not reclaimed then
    if record.workerId == batch.consumer and record.entryId == entryId then
      run(tonumber(attempts))
    else
      -- A second entry for a task that is running under a live lease.
      queueAck(batch, lane, entryId)
      replies[#replies + 1] = { 'skip', lane, entryId, name, 'running', status }
    end
    return
  end
  local started = tonumber(attempts or '0')
  if cancelRequestedAt then
    -- Cancel was stored while it waited (or its worker died): end it here, never run it.
    cancelWaiting(batch, key, taskId, started, agent, record.cancelReason or 'cancelled', seq, log, handoff)
    if concurrency then
      releaseConcurrencySlot(batch, concurrency, name)
    end
    queueAck(batch, lane, entryId)
    replies[#replies + 1] = { 'skip', lane, entryId, name, 'cancelled', 'CANCELLED' }
    return
  end
  local limit = tonumber(record.maxDeliveries or '0')
  if limit > 0 and started - tonumber(record.deliveriesBase or '0') >= limit then
    local errText = cjson.encode({ message = 'gave up after ' .. started .. ' deliveries (maxDeliveries ' ..
      limit .. ')', code = 'DELIVERY_LIMIT' })
    hsetAll(key, { 'status', 'FAILED', 'completedAt', batch.nowText, 'error', errText },
      statusEvent(batch, 'FAILED', taskId, started, agent, seq, log, ',"error":' .. errText))
    redis.call('PEXPIRE', key, batch.recordTtlMs)
    countStat(batch, 'failed')
    noteHandoff(batch.nowText, key, taskId, handoff or false)
    if concurrency then
      releaseConcurrencySlot(batch, concurrency, name)
    end
    -- The last attempt's error, when the record holds a readable one: named in the reason, kept in the letter.
    local ok, last = pcall(cjson.decode, record.error or '')
    if not (ok and type(last) == 'table' and type(last.code) == 'string' and type(last.message) == 'string') then
      last = nil
    end
    local reason = 'delivery limit reached after ' .. started .. ' attempts' ..
      (last and ('; last error: [' .. last.code .. '] ' .. last.message) or '')
    if entryId ~= '' then
      addDeadLetter(batch.deadLetters, batch.deadLetterMaxLen, entryId, reason, cjson.encode({ task = name }), batch.now,
        taskId, '{"attempts":' .. started .. ',"lastError":' .. (last and record.error or 'null') .. ',"priority":"' ..
        LANE_NAMES[lane] .. '"}')
      queueAck(batch, lane, entryId)
    end
    replies[#replies + 1] = { 'dead', lane, entryId, name, started, record.error or '', reason }
    return
  end
  if concurrency and status ~= 'RUNNING' and
    not takeConcurrencySlot(batch, concurrency, name, tonumber(record.concurrencyLimit) or 1) then
    if not record.parked then
      local waiting = concurrencySet(batch, concurrency) .. ':waiting'
      if record.parkedAt then
        redis.call('LPUSH', waiting, name)
      else
        redis.call('RPUSH', waiting, name)
      end
      redis.call('HSET', key, 'parked', lane, 'parkedAt', batch.nowText)
    end
    queueAck(batch, lane, entryId)
    replies[#replies + 1] = { 'skip', lane, entryId, name, 'parked', status }
    return
  end
  local attempt = started + 1
  local attemptText = string.format('%d', attempt)
  local fields = { 'status', 'RUNNING', 'attempt', attemptText, 'workerId', batch.consumer, 'startedAt', batch.nowText,
    'entryId', entryId }
  if status == 'WAITING' then
    -- Its wait timed out: it no longer waits for the signal (one sent now is refused).
    redis.call('HDEL', key, 'waiting')
  end
  if not record.waitMs then
    local waited = now - tonumber(record.createdAt or now)
    fields[#fields + 1] = 'waitMs'
    fields[#fields + 1] = string.format('%d', waited)
    countWait(batch, waited)
  end
  local extra = ',"workerId":' .. jsonString(batch.consumer)
  if status == 'RUNNING' then
    extra = extra .. ',"takenOverFrom":' .. jsonString(record.workerId or '')
  end
  hsetAll(key, fields, statusEvent(batch, 'RUNNING', taskId, attemptText, agent, seq, log, extra))
  run(attempt)
end
