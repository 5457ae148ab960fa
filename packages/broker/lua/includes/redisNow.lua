-- The time a script works with, in ms: Redis's own clock (TIME), unless the caller fixed one
-- (`given`, a number; tests do). Due times, start times and the fleet's judgements of them are
-- compared across processes: taken from one clock, a worker or client whose clock is off by 30 s
-- neither shortens nor stretches a delay.
local function redisNow(given)
  local fixed = tonumber(given)
  if fixed then
    return fixed
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
