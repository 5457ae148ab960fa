--- @include "countStat"
-- Counts how long a task waited before it first started, in the first bucket that holds it. The
-- buckets are named wait_le_<ms> (and wait_le_inf); readers take the bounds from the field names,
-- so this list is the only copy.
local WAIT_BUCKETS_MS = { 100, 500, 1000, 5000, 10000, 30000, 60000, 300000 }
local function countWait(batch, ms)
  for _, bound in ipairs(WAIT_BUCKETS_MS) do
    if ms <= bound then
      countStat(batch, 'wait_le_' .. bound)
      return
    end
  end
  countStat(batch, 'wait_le_inf')
end
