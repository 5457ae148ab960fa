-- Appends a batch of events for the attempt that is running now.
-- KEYS: task, events stream, events channel
-- ARGV: attempt ('*': whichever attempt is running), eventMaxLen, eventTtlMs, batch, body1, body2, ...
-- batch is either "attempt:n" (increasing per publisher: a batch already written — a resend after
-- a lost reply — is not written again), or "scope=<name>:<index of the first body>": the scope's
-- events are numbered from 1, and those already published under the scope are dropped, so a
-- retried producer (a Temporal activity) does not repeat what readers already saw.
-- Returns the last seq written, or -1 when the task is no longer RUNNING as this attempt
-- (finished, cancelled, or taken over): the caller must stop its run.
--@include "events"
local h = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'lastBatch', 'seq')
if h[1] ~= 'RUNNING' or (ARGV[1] ~= '*' and h[2] ~= ARGV[1]) then
  return -1
end
local bodies = {}
local fields
local scope, first = string.match(ARGV[4], '^scope=(.+):(%d+)$')
if scope then
  local hwField = 'hw:' .. scope
  local hw = tonumber(redis.call('HGET', KEYS[1], hwField) or '0')
  first = tonumber(first)
  for i = 5, #ARGV do
    if first + (i - 5) > hw then
      bodies[#bodies + 1] = ARGV[i]
    end
  end
  fields = { hwField, math.max(hw, first + #ARGV - 5) }
else
  if h[3] == ARGV[4] then
    return tonumber(h[4])
  end
  for i = 5, #ARGV do
    bodies[#bodies + 1] = ARGV[i]
  end
  fields = { 'lastBatch', ARGV[4] }
end
if #bodies == 0 then
  return tonumber(h[4] or '0')
end
return appendEvents(KEYS[1], KEYS[2], KEYS[3], bodies, ARGV[2], ARGV[3], h[4], fields)
