-- Appends a batch of events for the attempt that is running now.
-- KEYS: task, events stream, events channel
-- ARGV: attempt, eventMaxLen, eventTtlMs, batch (attempt:n, increasing), body1, body2, ...
-- A batch already written (a resend after a lost reply) is not written again.
-- Returns the last seq written, or -1 when the task is no longer RUNNING as this attempt
-- (finished, cancelled, or taken over): the caller must stop its run.
--@include "events"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'lastBatch', 'seq')
if h[1] ~= 'RUNNING' or h[2] ~= ARGV[1] then
  return -1
end
if h[3] == ARGV[4] then
  return tonumber(h[4])
end
local bodies = {}
for i = 5, #ARGV do
  bodies[#bodies + 1] = ARGV[i]
end
if #bodies == 0 then
  return tonumber(h[4] or '0')
end
return appendEvents(KEYS[1], KEYS[2], KEYS[3], bodies, ARGV[2], ARGV[3], h[4], { 'lastBatch', ARGV[4] })
