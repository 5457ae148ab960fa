#!lua flags=allow-oom
--[[
  Appends batches of events (other than status changes, which their records keep) for tasks of one
  queue, each for the attempt that runs it now: numbered after the task record's seq, added to the
  task's event stream and sent to its live channel. A worker's tasks of a queue publish together, one
  call per tick however many tasks emitted. Each task's batch is fenced and replay-safe on its own
  (see includes/reserveEventSeqs.lua): one fenced out, or whose record cannot be trusted, does not
  stop the others.

  Input:
    KEYS[1] the record of the call's first task (it names the queue's slot, which every task's keys share)
    ARGV[1] task key base, ARGV[2] event stream key base, ARGV[3] events channel base (a task's key is
      base .. name; the channel is Pub/Sub)
    ARGV[4..] per task: name, attempt ('*': whichever attempt is running), eventMaxLen, ttlMs (the
      stream's time to live after this batch while the task runs; settle sets eventTtlMs at the end),
      batchId ('<attempt>:<n>' or 'scope=<name>:<first index>'), count, then `count` event bodies
      (JSON objects without seq)

  Returns:
    per task, in order: the last seq written (the record's seq when nothing was new), or { that seq,
    how many messages wait in its inbox } when some do (sent to it: its worker takes them at its next
    turn boundary); -1 when the task is no longer RUNNING as this attempt (finished, cancelled, or
    taken over): the caller must stop its run; or 'CORRUPT_RECORD task record: <why>' when its record
    cannot be trusted: nothing written for it
]]
--- @include "reserveEventSeqs"
--- @include "appendEventBatch"
local taskBase, streamBase, channelBase = ARGV[1], ARGV[2], ARGV[3]
local out = {}
local i = 4
while i <= #ARGV do
  local name, attempt, maxLen, ttlMs, batchId, count = unpack(ARGV, i, i + 5)
  count = tonumber(count)
  local first = i + 6
  i = first + count
  local before, skip, waiting = reserveEventSeqs(taskBase .. name, attempt, batchId, count)
  if before == -2 then
    out[#out + 1] = 'CORRUPT_RECORD task record: ' .. skip
  elseif before < 0 then
    out[#out + 1] = -1
  else
    local last = before
    if skip < count then
      local bodies = {}
      for j = first + skip, i - 1 do
        bodies[#bodies + 1] = ARGV[j]
      end
      last = appendEventBatch(streamBase .. name, channelBase .. name, bodies, before + 1, maxLen, ttlMs)
    end
    out[#out + 1] = waiting > 0 and { last, waiting } or last
  end
end
return out
