-- Counts `n` (default 1) towards a field of the queue's fleet statistics (see flushStats).
local function countStat(batch, field, n)
  batch.stats[field] = (batch.stats[field] or 0) + (n or 1)
end
