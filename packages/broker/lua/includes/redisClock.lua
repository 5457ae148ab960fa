-- The time a script works with, as redisNow gives it (Redis's clock unless the caller fixed one),
-- both as a number (for arithmetic) and as its decimal text (for what is written or concatenated).
-- Why both: Lua turns a number into text through sprintf("%.14g"), and Redis turns a number given
-- to redis.call into text through snprintf("%.17g"): floating-point formatting that cost several
-- percent of a hot script's CPU when every record write and status event did it again.
local function redisClock(given)
  local fixed = tonumber(given)
  if fixed then
    return fixed, string.format('%d', fixed)
  end
  local t = redis.call('TIME')
  -- Microseconds without leading zeros: pad to six digits, keep the first three (the ms).
  local text = t[1] .. string.sub('00000' .. t[2], -6, -4)
  return tonumber(text), text
end
