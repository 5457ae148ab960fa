#!lua flags=allow-oom
--[[
  Appends a batch of a task's events (other than status changes, which its record keeps) for the
  attempt that runs it now: numbered after the record's seq, added to the task's event stream and
  sent to its live channel. Fenced and replay-safe (see includes/reserveEventSeqs.lua).

  Input:
    KEYS[1] task record
    KEYS[2] task event stream
    KEYS[3] task events channel (Pub/Sub; passed as a key so the call names the task's slot)
    ARGV[1] attempt ('*': whichever attempt is running)
    ARGV[2] eventMaxLen
    ARGV[3] the stream's time to live after this event while the task runs (runningEventTtlMs; settle sets eventTtlMs at the end)
    ARGV[4] batch id ('<attempt>:<n>' or 'scope=<name>:<first index>')
    ARGV[5..] event bodies (JSON objects without seq)

  Returns:
    the last seq written (the record's seq when nothing was new), or -1 when the task is no longer
    RUNNING as this attempt (finished, cancelled, or taken over): the caller must stop its run; the
    error CORRUPT_RECORD when the record cannot be trusted (see includes/recordFault.lua): nothing written
]]
--- @include "reserveEventSeqs"
--- @include "appendEventBatch"
local record, stream, channel = KEYS[1], KEYS[2], KEYS[3]
local attempt, maxLen, ttlMs, batchId = unpack(ARGV, 1, 4)
local count = #ARGV - 4
local before, skip = reserveEventSeqs(record, attempt, batchId, count)
if before == -2 then
  return redis.error_reply('CORRUPT_RECORD task record: ' .. skip)
end
if before < 0 then
  return -1
end
if skip == count then
  return before
end
local bodies = {}
for i = 5 + skip, #ARGV do
  bodies[#bodies + 1] = ARGV[i]
end
return appendEventBatch(stream, channel, bodies, before + 1, maxLen, ttlMs)
