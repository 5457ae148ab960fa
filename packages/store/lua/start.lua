-- Starts the tasks of entries already claimed by this consumer: read by a blocking XREADGROUP, or
-- reclaimed (their lease lapsed with a previous holder, who may be dead or frozen: a RUNNING task
-- is taken over).
-- KEYS: lane high, lane normal, lane low, stats bucket
-- ARGV: group, consumer, now, taskBase, recordTtlMs, statusChannel, reclaimed (0|1),
--       then per entry: lane, entryId, name
-- Returns one reply per entry (see includes/start.lua).
--@include "start"
local ctx = { consumer = ARGV[2], now = tonumber(ARGV[3]), base = ARGV[4], recordTtlMs = ARGV[5] }
local reclaimed = ARGV[7] == '1'
for i = 8, #ARGV, 3 do
  startEntry(ctx, tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2], reclaimed)
end
flushAcks(KEYS, ARGV[1])
flushStats(KEYS[4])
publishStatus(ARGV[6])
return replies
