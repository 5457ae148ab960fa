--- @include "settledBelow"
--- @include "@flotilla/broker/idAfter"
--- @include "@flotilla/broker/idBefore"
-- Trims a topic stream toward `maxLen` entries without removing an entry any group has not
-- settled (see settledBelow): the cut is the lower of the length bound and the settled bound, and
-- `~` lets Redis keep part of a node, so it only ever trims less. At most `TRIM_STEP` entries are
-- looked at per call. Returns true when unsettled entries held the trim back.
local TRIM_STEP = 1000
local function trimSettled(stream, maxLen)
  local len = redis.call('XLEN', stream)
  if len <= maxLen then
    return false
  end
  local settled = settledBelow(stream)
  if settled == nil then
    redis.call('XTRIM', stream, 'MAXLEN', '~', maxLen)
    return false
  end
  local over = redis.call('XRANGE', stream, '-', '+', 'COUNT', math.min(len - maxLen, TRIM_STEP))
  if #over == 0 then
    return false
  end
  local cut = idAfter(over[#over][1])
  local held = idBefore(settled, cut)
  if held then
    cut = settled
  end
  redis.call('XTRIM', stream, 'MINID', '~', cut)
  return held
end
