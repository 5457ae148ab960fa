--- @include "@flotilla/broker/ownedBy"
--- @include "@flotilla/broker/queueAck"
--- @include "isTerminal"
--- @include "hsetAll"
--- @include "statusEvent"
--- @include "cancelWaiting"
--- @include "countStat"
--- @include "settleEntry"
--- @include "recordFault"
--- @include "endStream"
--- @include "packRecord"
--- @include "keepLatest"
--- @include "noteHandoff"
--- @include "releaseConcurrencySlot"
-- Records one attempt's outcome (COMPLETED, FAILED, CANCELLED, RETRYING or WAITING) on its task
-- record and settles its entry. Fenced: only the holder of the current attempt of a RUNNING task may write,
-- so a late or stale writer can never overwrite a terminal status nor resurrect a finished task.
-- A RETRYING or WAITING attempt of a task whose cancel was requested ends it CANCELLED instead.
-- WAITING (`waiting`, `resume`: JSON of the signal it waits for and of its run's saved state) frees
-- the entry (delayed until the wait's timeout, `retryAt`, if it has one) and keeps the event stream
-- from expiring while nothing is said; the delivery limit counts afresh from here.
-- `release` '1': a RETRYING that hands the task back unfinished and uses up no retry.
-- A final outcome after earlier attempts clears what they left that no longer applies: a COMPLETED
-- task keeps no error, a FAILED one no result, neither a retry time nor a wait's state. A COMPLETED
-- record is written packed (see packRecord): most tasks end so, and it is what Redis keeps longest.
-- Adds to batch.settled { 'ok', status, deadLettered (0|1) }, { 'rejected', reason, currentStatus }
-- or { 'rejected', 'corrupt', why } (the record cannot be trusted: see recordFault).
local OUTCOME_FIELDS = { 'status', 'attempt', 'startedAt', 'cancelRequestedAt', 'cancelReason', 'taskId', 'agent', 'seq',
  'log', 'retries', 'handoff', 'concurrencyKey', 'lastBatch' }
local function recordOutcome(batch, lane, entryId, name, attempt, target, result, errText, retryAt, release, reason, usage,
  waiting, resume)
  local key = batch.taskBase .. name
  local settled = batch.settled
  local function owned()
    return entryId ~= '' and ownedBy(batch.lanes[lane], batch.group, entryId, batch.consumer)
  end
  local names = OUTCOME_FIELDS
  if target == 'COMPLETED' then
    -- The record is packed (see packRecord): what it keeps is read in the same HMGET.
    if not batch.packFields then
      batch.packFields = { unpack(OUTCOME_FIELDS) }
      for _, field in ipairs(PACK_EXTRA_FIELDS) do
        batch.packFields[#batch.packFields + 1] = field
      end
    end
    names = batch.packFields
  end
  local values = redis.pcall('HMGET', key, unpack(names))
  local fault = (values.err or values[1]) and recordFault(OUTCOME_FIELDS, values)
  if fault then
    -- Nothing written and the entry left pending: the worker takes the task out (failCorrupt-4.lua).
    settled[#settled + 1] = { 'rejected', 'corrupt', fault }
    return
  end
  local current, recorded, startedAt, cancelRequestedAt, cancelReason, taskId, agent, seq, log, retries, handoff, concurrency,
    lastBatch = unpack(values, 1, #OUTCOME_FIELDS)
  if not current then
    if owned() then
      queueAck(batch, lane, entryId)
    end
    settled[#settled + 1] = { 'rejected', 'missing', '' }
    return
  end
  if current == target and recorded == attempt then
    -- The same outcome of the same attempt again: a resend after a lost reply.
    local dead = 0
    if owned() then
      dead = settleEntry(batch, lane, entryId, name, taskId, target, attempt, errText, retryAt, reason)
    end
    settled[#settled + 1] = { 'ok', current, dead }
    return
  end
  if isTerminal(current) then
    if owned() then
      queueAck(batch, lane, entryId)
    end
    settled[#settled + 1] = { 'rejected', 'terminal', current }
    return
  end
  if current ~= 'RUNNING' or recorded ~= attempt then
    settled[#settled + 1] = { 'rejected', 'stale', current }
    return
  end
  local durationMs = string.format('%d', batch.now - tonumber(startedAt or batch.now))
  if (target == 'RETRYING' or target == 'WAITING') and cancelRequestedAt then
    redis.call('HSET', key, 'durationMs', durationMs)
    cancelWaiting(batch, key, taskId, attempt, agent, cancelReason or 'cancelled', seq, log, handoff)
    if concurrency then
      releaseConcurrencySlot(batch, concurrency, name)
    end
    queueAck(batch, lane, entryId)
    settled[#settled + 1] = { 'ok', 'CANCELLED', 0 }
    return
  end
  local fields = { 'status', target, 'durationMs', durationMs }
  if result ~= '' then
    fields[#fields + 1] = 'result'
    fields[#fields + 1] = result
  end
  if usage ~= '' then
    fields[#fields + 1] = 'usage'
    fields[#fields + 1] = usage
  end
  local extra
  if errText ~= '' then
    fields[#fields + 1] = 'error'
    fields[#fields + 1] = errText
    extra = ',"error":' .. errText
  end
  if target == 'WAITING' then
    if retryAt ~= '' then
      waiting = string.sub(waiting, 1, -2) .. ',"timeoutAt":' .. retryAt .. '}'
    end
    extra = ',"waiting":' .. waiting
    fields[#fields + 1] = 'waiting'
    fields[#fields + 1] = waiting
    fields[#fields + 1] = 'resume'
    fields[#fields + 1] = resume
    fields[#fields + 1] = 'deliveriesBase'
    fields[#fields + 1] = attempt
    redis.call('HDEL', key, 'signal', 'retryAt')
    if batch.streams then
      redis.call('PERSIST', batch.streams.base .. name)
    end
  elseif target == 'RETRYING' then
    if release ~= '1' then
      fields[#fields + 1] = 'retries'
      fields[#fields + 1] = string.format('%d', tonumber(retries or '0') + 1)
    end
    fields[#fields + 1] = 'retryAt'
    fields[#fields + 1] = retryAt
  else
    fields[#fields + 1] = 'completedAt'
    fields[#fields + 1] = batch.nowText
  end
  local keep = isTerminal(target) and batch.keep and (target == 'FAILED' and batch.keep.failed or batch.keep.completed)
  local event = statusEvent(batch, target, taskId, attempt, agent, seq, log, extra, result)
  if target == 'COMPLETED' then
    -- What is packed: the record as read, with this outcome's result, usage and status log over it.
    local record = {}
    for i = 1, #names do
      local value = values[i]
      if value then
        record[names[i]] = value
      end
    end
    if result ~= '' then
      record.result = result
    end
    if usage ~= '' then
      record.usage = usage
    end
    record.log = event[4]
    packRecord(key, keep and keep.ageMs or batch.recordTtlMs, record, attempt, handoff)
  else
    if isTerminal(target) and tonumber(attempt) > 1 then
      redis.call('HDEL', key, 'result', 'retryAt', 'resume', 'signal')
    end
    hsetAll(key, fields, event)
  end
  if isTerminal(target) then
    if target ~= 'COMPLETED' then
      redis.call('PEXPIRE', key, keep and keep.ageMs or batch.recordTtlMs)
    end
    if batch.streams then
      endStream(batch.streams, name, lastBatch)
    end
    if keep then
      keepLatest(batch, keep, name)
    end
    noteHandoff(batch.nowText, key, taskId, handoff)
  end
  if concurrency then
    -- It no longer runs (ended, or waits for its retry): its key's slot goes to the next waiting task.
    releaseConcurrencySlot(batch, concurrency, name)
  end
  local dead = settleEntry(batch, lane, entryId, name, taskId, target, attempt, errText, retryAt, reason)
  if target ~= 'WAITING' then
    countStat(batch, string.lower(target))
  end
  settled[#settled + 1] = { 'ok', target, dead }
end
