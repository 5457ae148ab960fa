--- @include "@flotilla/broker/ownedBy"
--- @include "@flotilla/broker/queueAck"
--- @include "@flotilla/broker/delayEntry"
--- @include "@flotilla/broker/addDeadLetter"
-- Settles the queue entry of an outcome the record accepted: acknowledged (completed, cancelled),
-- moved to the lane's delayed set (retrying; waiting with a timeout), or dead-lettered (failed). Needs batch.delayed (the
-- lanes' delayed sets), batch.deadLetters and batch.deadLetterMaxLen. Returns 1 when it
-- dead-lettered the entry, else 0.
local LANE_NAMES = { 'high', 'normal', 'low' }
local function settleEntry(batch, lane, entryId, name, taskId, target, attempt, errText, retryAt, reason)
  if entryId == '' then
    return 0
  end
  if target == 'RETRYING' or target == 'WAITING' then
    -- Only while the entry is still ours: a worker that took it over runs the task from it. A
    -- WAITING task comes back when its wait times out (retryAt), or when a signal re-queues it.
    if ownedBy(batch.lanes[lane], batch.group, entryId, batch.consumer) then
      if retryAt ~= '' then
        delayEntry(batch.delayed[lane], retryAt, name)
      end
      queueAck(batch, lane, entryId)
    end
    return 0
  end
  if target == 'FAILED' then
    addDeadLetter(batch.deadLetters, batch.deadLetterMaxLen, entryId, reason, cjson.encode({ task = name }), batch.now,
      taskId, '{"attempts":' .. attempt .. ',"lastError":' .. (errText ~= '' and errText or 'null') ..
      ',"priority":"' .. LANE_NAMES[lane] .. '"}')
    queueAck(batch, lane, entryId)
    return 1
  end
  queueAck(batch, lane, entryId)
  return 0
end
