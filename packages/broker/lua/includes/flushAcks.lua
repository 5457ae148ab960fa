--- @include "idAfter"
--- @include "idBefore"
-- Acknowledges the entries queueAck noted and removes them from their lanes, per lane: one XACK,
-- then the cheapest removal that never touches an entry still pending or not yet delivered. A lane
-- holds only unfinished entries (and a few acknowledged ones until the next call trims them).
-- Entries below the lane's oldest pending one were all delivered (a group reads in id order) and
-- acknowledged, so XTRIM MINID drops them whole nodes at a time; only acknowledged entries above
-- the oldest pending one (another worker's older task still runs) are deleted one by one (XDEL).
-- Why: XDEL finds each id by walking its stream node from the start, which cost more than
-- everything else a settle does for a task; trimming never deletes past what is pending, so the
-- group's lag stays exact (XINFO GROUPS, what depth readers and autoscalers read).
local function flushAcks(batch)
  for lane = 1, 3 do
    local ids = batch.acks[lane]
    local key = batch.lanes[lane]
    -- pcall: a lane that lost its group (Redis lost its data) has nothing left to remove.
    local first = #ids > 0 and redis.call('XACK', key, batch.group, unpack(ids)) and
      redis.pcall('XPENDING', key, batch.group, '-', '+', 1)
    if first and not first.err then
      local oldest = first[1] and first[1][1]
      local upTo, above = nil, {}
      for _, id in ipairs(ids) do
        if oldest and idBefore(oldest, id) then
          above[#above + 1] = id
        elseif not upTo or idBefore(upTo, id) then
          upTo = id
        end
      end
      if upTo then
        redis.call('XTRIM', key, 'MINID', idAfter(upTo))
      end
      if #above > 0 then
        redis.call('XDEL', key, unpack(above))
      end
    end
  end
end
