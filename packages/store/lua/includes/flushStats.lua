-- Writes the call's counts into the queue's statistics bucket (a hash per 5 seconds), one HINCRBY
-- per field: outcomes as workers record them and first-start wait times, for alerts and dashboards.
local STATS_TTL_MS = 7200000
local function flushStats(batch, key)
  local any = false
  for field, n in pairs(batch.stats) do
    redis.call('HINCRBY', key, field, n)
    any = true
  end
  if any then
    redis.call('PEXPIRE', key, STATS_TTL_MS)
  end
end
