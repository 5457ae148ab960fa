#!lua
--[[
  Claims up to `count` new entries of a queue for this consumer and starts their tasks, in one
  step: lanes are read in the given order without blocking, so a worker makes one round trip for a
  whole batch.

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    KEYS[4] claim marker (unique to this call: a resend starts the same entries again)
    KEYS[5] statistics bucket
    KEYS[6] dead letters (a task past its delivery limit is dead-lettered here, in this call)
    ARGV[1..6] the call: consumer group, consumer, now (ms; '' for Redis's clock), task key base, recordTtlMs, status channel
    ARGV[7] dead letters kept (approximate trim)
    ARGV[8] count
    ARGV[9] lane order (e.g. '1,2,3': high, normal, low)

  Returns:
    one reply per entry (see includes/startEntry.lua and includes/startNewEntries.lua); the error
    NOGROUP when a lane has no consumer group (Redis lost its data) and no other lane gave an entry:
    nothing was written, and the worker makes the groups again
]]
--- @include "newBatch"
--- @include "startNewEntries"
--- @include "finish"
local group, consumer, now, taskBase, recordTtlMs, statusChannel, deadLetterMaxLen, count, order = unpack(ARGV, 1, 9)
local batch = newBatch({ KEYS[1], KEYS[2], KEYS[3] }, group, consumer, now, taskBase, recordTtlMs)
batch.deadLetters = KEYS[6]
batch.deadLetterMaxLen = deadLetterMaxLen
startNewEntries(batch, tonumber(count), order, KEYS[4])
finish(batch, KEYS[5], statusChannel)
if batch.noGroup and #batch.replies == 0 then
  return redis.error_reply("NOGROUP No such key '" .. batch.noGroup .. "' or consumer group '" .. group .. "'")
end
return batch.replies
