-- Claims up to `count` new entries of a queue for this consumer and starts their tasks, in one
-- step: lanes are read in the given order without blocking (strict priority unless the fairness
-- rule reorders them), so the worker makes one round trip for a whole batch.
-- KEYS: lane high, lane normal, lane low, claim marker (unique to this call), stats bucket
-- ARGV: group, consumer, now, taskBase, recordTtlMs, statusChannel, count, lane order (e.g. '1,2,3')
-- Returns one reply per entry (see includes/start.lua).
--@include "start"
local ctx = { consumer = ARGV[2], now = tonumber(ARGV[3]), base = ARGV[4], recordTtlMs = ARGV[5] }
claimNew(ctx, KEYS, ARGV[1], tonumber(ARGV[7]), ARGV[8], KEYS[4])
flushAcks(KEYS, ARGV[1])
flushStats(KEYS[5])
publishStatus(ARGV[6])
return replies
