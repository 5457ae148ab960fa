--- @include "@flotilla/broker/idAfter"
--- @include "@flotilla/broker/idBefore"
-- The first id some group of the stream has not settled: below it every group has read and
-- acknowledged every entry. For each group that is its oldest pending entry (pending entries
-- include those waiting for a retry), else the entry after the last one delivered to it. Nil when
-- the stream has no groups: nothing holds it.
local function settledBelow(stream)
  local groups = redis.call('XINFO', 'GROUPS', stream)
  local lowest = nil
  for _, info in ipairs(groups) do
    local g = {}
    for i = 1, #info, 2 do
      g[info[i]] = info[i + 1]
    end
    local candidate
    if g.pending > 0 then
      candidate = redis.call('XPENDING', stream, g.name)[2]
    else
      candidate = idAfter(g['last-delivered-id'])
    end
    if lowest == nil or idBefore(candidate, lowest) then
      lowest = candidate
    end
  end
  return lowest
end
