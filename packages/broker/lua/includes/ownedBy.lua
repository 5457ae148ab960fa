-- True when the entry is pending and delivered to this consumer: its lease is ours.
local function ownedBy(stream, group, entryId, consumer)
  local pending = redis.call('XPENDING', stream, group, entryId, entryId, 1)
  return #pending == 1 and pending[1][2] == consumer
end
