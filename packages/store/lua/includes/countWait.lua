--- @include "countStat"
-- Counts how long a task waited before it first started, in the first bucket that holds it. The
-- buckets are named wait_le_<ms> (and wait_le_inf); readers take the bounds from the field names,
-- so this list is the only copy.
local WAIT_BUCKETS_MS = { 100, 500, 1000, 5000, 10000, 30000, 60000, 300000 }
-- Their field names, written out (a number concatenated is formatted through sprintf each time).
local WAIT_FIELDS = { 'wait_le_100', 'wait_le_500', 'wait_le_1000', 'wait_le_5000', 'wait_le_10000', 'wait_le_30000',
  'wait_le_60000', 'wait_le_300000' }
local function countWait(batch, ms)
  for i, bound in ipairs(WAIT_BUCKETS_MS) do
    if ms <= bound then
      countStat(batch, WAIT_FIELDS[i])
      return
    end
  end
  countStat(batch, 'wait_le_inf')
end
