--- @include "ownedBy"
-- Renews the leases of the entries of `ids` this consumer holds: XCLAIM ... JUSTID resets an
-- entry's idle time without counting a delivery. Returns the ids it no longer holds (taken over,
-- acknowledged, or lost with Redis's data), which are left alone.
local function renewHeld(stream, group, consumer, ids)
  local lost = {}
  for _, id in ipairs(ids) do
    if ownedBy(stream, group, id, consumer) then
      redis.call('XCLAIM', stream, group, consumer, 0, id, 'JUSTID')
    else
      lost[#lost + 1] = id
    end
  end
  return lost
end
