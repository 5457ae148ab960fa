-- Shared by every script that writes a task's events. Every event gets the next number of the
-- record's `seq` counter, so a task's events have no gap whoever writes them.
--   * Status events are kept in the record itself (its `log` field, comma-joined JSON) and go out
--     on the queue's status channel: one PUBLISH per script call, however many tasks it touched.
--   * Other events (text, tools, ...) go to the task's own stream (replay) and channel (live).

local TERMINAL = { COMPLETED = true, FAILED = true, CANCELLED = true }

-- Appends a batch of events after `seq` (the record's counter as read): bodies are JSON objects
-- without "seq", which is spliced in as the first field. The batch is one stream entry, a JSON
-- array, with id 0-<last seq>: a reader resumes after any seq with XRANGE "(0-<seq>" and drops the
-- earlier events of the first entry it gets. The stream keeps about `maxLen` events (MINID trim).
-- `fields`: more record fields to set in the same HSET as the new seq.
local function appendEvents(taskKey, streamKey, channel, bodies, maxLen, ttlMs, seq, fields)
  local n = #bodies
  local first = tonumber(seq or '0') + 1
  local last = first + n - 1
  local out = {}
  for i = 1, n do
    out[i] = '{"seq":' .. (first + i - 1) .. ',' .. string.sub(bodies[i], 2)
  end
  local text = '[' .. table.concat(out, ',') .. ']'
  fields[#fields + 1] = 'seq'
  fields[#fields + 1] = last
  redis.call('HSET', taskKey, unpack(fields))
  redis.call('XADD', streamKey, 'MINID', '~', '0-' .. math.max(0, last - tonumber(maxLen)), '0-' .. last, 'e', text)
  redis.call('PEXPIRE', streamKey, ttlMs)
  redis.call('PUBLISH', channel, text)
  return last
end

-- Status events this script call produced, published together by publishStatus().
local statusOut = {}

-- A JSON string literal; plain ids skip the encoder.
local function jsonString(text)
  if string.find(text, '^[%w_%.:%- /]*$') then
    return '"' .. text .. '"'
  end
  return cjson.encode(text)
end

-- Builds a status event numbered after `seq` (the record's counter as read) and queues it for the
-- status channel. `extra`: JSON members to add, as text starting with a comma. `result` (JSON
-- text) rides only on the published copy: the record holds it once, in its `result` field, and
-- readers put it back. Built by concatenation: this runs for every task, twice.
-- Returns the fields to write with the record's own HSET: 'seq', next, 'log', log with the event.
local function statusEvent(status, taskId, attempt, agent, now, seq, log, extra, result)
  local nextSeq = tonumber(seq or '0') + 1
  local text = '{"seq":' .. nextSeq .. ',"type":"status","status":"' .. string.lower(status) .. '","taskId":"' ..
    taskId .. '","attempt":' .. tonumber(attempt) .. ',"ts":' .. now .. ',"agent":' .. jsonString(agent or '') ..
    (extra or '') .. '}'
  if result and result ~= '' then
    statusOut[#statusOut + 1] = string.sub(text, 1, -2) .. ',"result":' .. result .. '}'
  else
    statusOut[#statusOut + 1] = text
  end
  local newLog = text
  if log and log ~= '' then
    newLog = log .. ',' .. text
  end
  return { 'seq', nextSeq, 'log', newLog }
end

local function publishStatus(channel)
  if #statusOut > 0 then
    redis.call('PUBLISH', channel, '[' .. table.concat(statusOut, ',') .. ']')
    statusOut = {}
  end
end

-- HSET of `fields` followed by `more` (flat lists).
local function hsetAll(key, fields, more)
  for i = 1, #more do
    fields[#fields + 1] = more[i]
  end
  redis.call('HSET', key, unpack(fields))
end
