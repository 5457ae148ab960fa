--- @include "recordFault"
-- Numbers a batch of `count` events of a task, fenced: only while the task is RUNNING as `attempt`
-- ('*': whichever attempt runs, for producers that outlive attempts, such as Temporal activities).
-- `batchId` makes a resend harmless:
--   '<attempt>:<n>' (increasing per publisher): a batch already written is not written again;
--   'scope=<name>:<index of the first event>': the scope's events are numbered from 1, and those
--   already published under it (its high-water mark, field hw:<name>) are dropped, so a retried
--   producer does not repeat what readers already saw.
-- Returns -1 when fenced out; -2 and why when the record cannot be trusted (nothing written); else the record's seq before the batch, how many leading events
-- of the batch to drop (count when there is nothing to write), and how many messages wait in the
-- task's inbox (sent to it: see sendMessage-2.lua). Writes the new seq and the batch's
-- bookkeeping in one HSET; either way 'lastBatch' is set, which the task's end reads (endStream).
local EVENT_SEQ_FIELDS = { 'status', 'attempt', 'lastBatch', 'seq', 'inbox' }
local function reserveEventSeqs(key, attempt, batchId, count)
  local values = redis.pcall('HMGET', key, unpack(EVENT_SEQ_FIELDS))
  local fault = recordFault(EVENT_SEQ_FIELDS, values)
  if fault then
    return -2, fault
  end
  local status, running, lastBatch, seq, inbox = unpack(values, 1, #EVENT_SEQ_FIELDS)
  local waiting = tonumber(inbox or '0')
  if status ~= 'RUNNING' or (attempt ~= '*' and running ~= attempt) then
    return -1, 0
  end
  local before = tonumber(seq or '0')
  local skip = 0
  local field, mark
  local scope, first = string.match(batchId, '^scope=(.+):(%d+)$')
  if scope then
    field = 'hw:' .. scope
    local stored = redis.call('HGET', key, field) or '0'
    if not string.find(stored, '^%d+$') then
      return -2, field .. ' is not a number'
    end
    local high = tonumber(stored)
    first = tonumber(first)
    skip = math.min(count, math.max(0, high - first + 1))
    mark = math.max(high, first + count - 1)
  else
    if lastBatch == batchId then
      return before, count, waiting
    end
    field, mark = 'lastBatch', batchId
  end
  if skip == count then
    return before, count, waiting
  end
  if scope then
    -- lastBatch also tells the task's end that it has an event stream (see endStream).
    redis.call('HSET', key, 'seq', string.format('%d', before + count - skip), field, string.format('%d', mark), 'lastBatch',
      batchId)
  else
    redis.call('HSET', key, 'seq', string.format('%d', before + count - skip), field, mark)
  end
  return before, skip, waiting
end
