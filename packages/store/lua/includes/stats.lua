-- Fleet statistics per queue, in 5-second buckets (a hash per bucket, kept 2 hours): outcomes as
-- workers record them and how long tasks waited before they first started, counted per script
-- call and written with one HINCRBY per field, for alerts and dashboards.
local stats = {}
local WAIT_BUCKETS = { 100, 500, 1000, 5000, 10000, 30000, 60000, 300000 }

local function countStat(field, n)
  stats[field] = (stats[field] or 0) + (n or 1)
end

local function countWait(ms)
  for _, bound in ipairs(WAIT_BUCKETS) do
    if ms <= bound then
      countStat('wait_le_' .. bound)
      return
    end
  end
  countStat('wait_le_inf')
end

local function flushStats(key)
  local any = false
  for field, n in pairs(stats) do
    redis.call('HINCRBY', key, field, n)
    any = true
  end
  if any then
    redis.call('PEXPIRE', key, 7200000)
  end
  stats = {}
end
