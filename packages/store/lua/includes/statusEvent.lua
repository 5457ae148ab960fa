--- @include "jsonString"
-- Builds a status event numbered after `seq` (the record's counter as read) and queues it for the
-- queue's status channel. Status events are kept in the record itself, in its `log` field
-- (comma-joined JSON), so a task gets an event stream only when it emits other events. The log's
-- copy leaves out what the record holds once (type, taskId, agent): readers put them back.
-- `extra`: JSON members to add, as text starting with a comma. `result` (JSON text) rides only on
-- the published copy: the record holds it once, in its `result` field, and readers put it back.
-- Built by concatenation: this runs for every task, twice.
-- Returns the fields to write with the record's own HSET: 'seq', next, 'log', log with the event.
local STATUS_WORDS = { PENDING = 'pending', RUNNING = 'running', RETRYING = 'retrying', WAITING = 'waiting',
  COMPLETED = 'completed', FAILED = 'failed', CANCELLED = 'cancelled' }
local function statusEvent(batch, status, taskId, attempt, agent, seq, log, extra, result)
  -- Numbers as text made once, with integer formatting: see @flotilla/broker/redisClock for why.
  local nextSeq = string.format('%d', (tonumber(seq) or 0) + 1)
  if type(attempt) == 'number' then
    attempt = string.format('%d', attempt)
  end
  local lower = STATUS_WORDS[status]
  local rest = ',"attempt":' .. attempt .. ',"ts":' .. batch.nowText .. (extra or '') .. '}'
  local text = '{"seq":' .. nextSeq .. ',"status":"' .. lower .. '"' .. rest
  local full = '{"seq":' .. nextSeq .. ',"type":"status","status":"' .. lower .. '","taskId":"' .. taskId .. '","agent":' ..
    jsonString(agent or '') .. rest
  local published = batch.status
  if result and result ~= '' then
    published[#published + 1] = string.sub(full, 1, -2) .. ',"result":' .. result .. '}'
  else
    published[#published + 1] = full
  end
  local newLog = text
  if log and log ~= '' then
    newLog = log .. ',' .. text
  end
  return { 'seq', nextSeq, 'log', newLog }
end
