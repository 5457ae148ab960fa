--- @include "noGroup"
-- True when the entry is pending and delivered to this consumer: its lease is ours. A lane without
-- its consumer group (Redis lost its data) holds nothing of anyone's.
local function ownedBy(stream, group, entryId, consumer)
  local pending = redis.pcall('XPENDING', stream, group, entryId, entryId, 1)
  if noGroup(pending) then
    return false
  end
  return #pending == 1 and pending[1][2] == consumer
end
