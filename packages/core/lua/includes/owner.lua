-- True when the entry is pending and delivered to this consumer: its lease is ours.
local function ownedBy(stream, group, id, consumer)
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  return #p == 1 and p[1][2] == consumer
end
