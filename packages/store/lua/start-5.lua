#!lua
--[[
  Starts the tasks of entries this consumer already holds: read by a blocking XREADGROUP, or
  reclaimed after their lease lapsed with a previous holder, who may be dead or frozen (then a
  RUNNING task is taken over).

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    KEYS[4] statistics bucket
    KEYS[5] dead letters (a task past its delivery limit is dead-lettered here, in this call)
    ARGV[1..6] the call: consumer group, consumer, now (ms; '' for Redis's clock), task key base, recordTtlMs, status channel
    ARGV[7] dead letters kept (approximate trim)
    ARGV[8] reclaimed (0 | 1)
    ARGV[9..] per entry (3): lane, entryId, name

  Returns:
    one reply per entry (see includes/startEntry.lua)
]]
--- @include "newBatch"
--- @include "startEntry"
--- @include "finish"
local WIDTH = 3
local group, consumer, now, taskBase, recordTtlMs, statusChannel, deadLetterMaxLen, reclaimed = unpack(ARGV, 1, 8)
local batch = newBatch({ KEYS[1], KEYS[2], KEYS[3] }, group, consumer, now, taskBase, recordTtlMs)
batch.deadLetters = KEYS[5]
batch.deadLetterMaxLen = deadLetterMaxLen
for i = 9, #ARGV, WIDTH do
  local lane, entryId, name = unpack(ARGV, i, i + WIDTH - 1)
  startEntry(batch, tonumber(lane), entryId, name, reclaimed == '1')
end
finish(batch, KEYS[4], statusChannel)
return batch.replies
